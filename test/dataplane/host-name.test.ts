/**
 * config/host-name.ts: the Host header without its port, for routing and the https redirect.
 * One loop from the end replaced two lastIndexOf calls: it must cut exactly where they did.
 */
import { describe, expect, it } from 'vitest';
import { hostName } from '../../dataplane/config/host-name.ts';

/** The two-lastIndexOf version it replaced. */
const before = (host: string) => {
  const colon = host.lastIndexOf(':');
  return colon > host.lastIndexOf(']') ? host.slice(0, colon) : host;
};

describe('hostName', () => {
  it('drops a port, keeps a name, an IPv4 address or an IPv6 literal without one', () => {
    expect(hostName('api.example:8080')).toBe('api.example');
    expect(hostName('api.example')).toBe('api.example');
    expect(hostName('10.0.0.1:80')).toBe('10.0.0.1');
    expect(hostName('[::1]:8443')).toBe('[::1]');
    expect(hostName('[2001:db8::1]')).toBe('[2001:db8::1]');
    expect(hostName('api.example:')).toBe('api.example');
    expect(hostName('')).toBe('');
  });

  it('cuts where the lastIndexOf version did, on every string of ":", "]", "[" and "a" up to 6 long', () => {
    const alphabet = [':', ']', '[', 'a'];
    let strings = [''];
    let checked = 0;
    for (let len = 0; len <= 6; len++) {
      for (const s of strings) {
        expect(hostName(s), JSON.stringify(s)).toBe(before(s));
        checked++;
      }
      strings = strings.flatMap((s) => alphabet.map((c) => s + c));
    }
    expect(checked).toBe((4 ** 7 - 1) / 3);
  });
});
