/**
 * Reading the ingress-nginx annotations on who may send what and how much (controller/ingress/
 * annotations.ts): whitelist-source-range, denylist-source-range, proxy-body-size,
 * limit-connections, canary-by-header-pattern. Each value is read into the
 * Ingress's effects, or reported naming the annotation and the value and left out. Pure.
 */
import { describe, expect, it } from 'vitest';
import { NGINX_PREFIX, readAnnotations } from '../../controller/ingress/annotations.ts';
import { canaryHeaderMatches, canaryHeaderOf } from '../../controller/ingress/index.ts';
import { anchoredRegex } from '../../dataplane/config/regex.ts';

const read = (annotations: Record<string, string>) =>
  readAnnotations(Object.fromEntries(Object.entries(annotations).map(([k, v]) => [NGINX_PREFIX + k, v])));

describe('whitelist-source-range / denylist-source-range', () => {
  it('read comma-separated addresses and CIDR ranges, IPv4 and IPv6, spaces or not', () => {
    const r = read({
      'whitelist-source-range': '10.0.0.0/8, 192.0.2.7,2001:db8::/32',
      'denylist-source-range': ' 10.1.0.0/16 ',
    });
    expect(r.problems).toEqual([]);
    expect(r.effects.sourceRanges).toEqual({
      allow: ['10.0.0.0/8', '192.0.2.7', '2001:db8::/32'],
      deny: ['10.1.0.0/16'],
    });
  });

  it.each([
    ['10.0.0.0/33', 'prefix length that is not a whole number from 0 to 32'],
    ['2001:db8::/129', 'from 0 to 128'],
    ['10.0.0.0/8, intranet', '"intranet", which is not an IP address or CIDR range'],
    ['10.0.0.256', 'not an IP address'],
    [' , ', 'must list IP addresses or CIDR ranges'],
  ])('%j is reported naming the annotation and the value, and left out', (value, why) => {
    const r = read({ 'whitelist-source-range': value });
    expect(r.effects.sourceRanges).toEqual({});
    expect(r.problems).toEqual([
      {
        annotation: `${NGINX_PREFIX}whitelist-source-range`,
        reason: 'InvalidAnnotation',
        message: expect.stringContaining(why),
      },
    ]);
    expect(r.problems[0].message).toContain(JSON.stringify(value));
  });
});

describe('proxy-body-size', () => {
  it.each([
    ['8m', 8 * 1024 * 1024],
    ['512k', 512 * 1024],
    ['1G', 1024 ** 3],
    ['1000', 1000],
    [' 2M ', 2 * 1024 * 1024],
    ['0', 0],
  ])('reads %j as nginx does (1024-based units): %d bytes', (value, bytes) => {
    const r = read({ 'proxy-body-size': value });
    expect(r.problems).toEqual([]);
    expect(r.effects.proxyBodySize).toBe(bytes);
  });

  it.each(['8 MB', '8mb', '-1', '1.5m', 'big', ''])('%j is reported and left out', (value) => {
    const r = read({ 'proxy-body-size': value });
    expect(r.effects.proxyBodySize).toBeUndefined();
    expect(r.problems).toEqual([
      {
        annotation: `${NGINX_PREFIX}proxy-body-size`,
        reason: 'InvalidAnnotation',
        message: expect.stringContaining(`${JSON.stringify(value)} must be a size`),
      },
    ]);
  });
});

describe('limit-connections', () => {
  it('reads a whole number of requests in progress per client', () => {
    const r = read({ 'limit-connections': '20' });
    expect(r.problems).toEqual([]);
    expect(r.effects.connections).toBe(20);
  });

  it.each(['0', '-1', 'ten', '1.5'])('%j is reported and left out', (value) => {
    const r = read({ 'limit-connections': value });
    expect(r.effects.connections).toBeUndefined();
    expect(r.problems).toEqual([
      expect.objectContaining({
        annotation: `${NGINX_PREFIX}limit-connections`,
        reason: 'InvalidAnnotation',
        message: expect.stringContaining(`${JSON.stringify(value)} must be a whole number from 1 to 1000000`),
      }),
    ]);
  });
});

describe('canary-by-header-pattern', () => {
  it('reads a regular expression the canary header must hold', () => {
    const r = read({
      canary: 'true',
      'canary-by-header': 'X-Canary',
      'canary-by-header-pattern': '^(beta|team-[a-z]+)$',
    });
    expect(r.problems).toEqual([]);
    expect(r.effects.canary).toMatchObject({ header: 'X-Canary', headerPattern: '^(beta|team-[a-z]+)$' });
  });

  it('matches anywhere in the value, as ingress-nginx (ngx.re.match, unanchored); a value wins over it', () => {
    const by = canaryHeaderMatches({ name: 'X-Canary', pattern: 'beta' });
    expect(by).toEqual({ canary: { name: 'x-canary', type: 'RegularExpression', value: '.*(?:beta).*' } });
    const re = anchoredRegex(by.canary.value);
    expect(['beta', 'is-beta-1'].map((v) => re.test(v))).toEqual([true, true]);
    expect(['Beta', 'alpha'].map((v) => re.test(v))).toEqual([false, false]);
    const r = read({
      canary: 'true',
      'canary-by-header': 'X-Canary',
      'canary-by-header-value': 'yes',
      'canary-by-header-pattern': 'b',
    });
    expect(canaryHeaderOf(r.effects.canary)).toEqual({ name: 'X-Canary', value: 'yes' });
  });

  it.each([
    ['(a+)+$', 'could backtrack catastrophically'],
    ['(unclosed', 'is not a valid regular expression'],
    ['', 'must be a regular expression'],
  ])('%j is reported and left out', (value, why) => {
    const r = read({ 'canary-by-header-pattern': value });
    expect(r.effects.canary.headerPattern).toBeUndefined();
    expect(r.problems).toEqual([
      expect.objectContaining({
        annotation: `${NGINX_PREFIX}canary-by-header-pattern`,
        reason: 'InvalidAnnotation',
        message: expect.stringContaining(why),
      }),
    ]);
  });
});
