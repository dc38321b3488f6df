/**
 * Gateway HTTPS listener ports end to end, with openssl-made certificates (test/tls/pki.ts): the
 * SNI picks the listener (hostname specificity) and the certificate among that listener's own
 * (the first when none covers the name), ALPN gives h2 and http/1.1, a name no listener of the
 * port takes gets no handshake, the proxy's own TLS port never presents a listener's
 * certificate, and a port a snapshot switches to HTTP serves cleartext from then on.
 */
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { acceptedSockets, h2Request, h2Session, untilPort } from '../helpers/listeners.ts';
import { freePort, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { listener, route, snapshot, upstream } from '../helpers/tables.ts';
import { type Leaf, makePki, type Pki } from '../tls/pki.ts';
import { certificate, handshake } from '../tls/tls-helpers.ts';

let pki: Pki;
let leaves: Record<'a' | 'b' | 'api' | 'only', Leaf>;
let up: Upstream;
let dp: DataPlane;
let port: number;
let onlyPort: number;
const httpsPortOf = (d: DataPlane) => Number(new URL(d.httpsUrl).port);

beforeAll(async () => {
  pki = makePki();
  leaves = {
    a: pki.leaf('a', ['a.example.test']),
    b: pki.leaf('b', ['b.example.test']),
    api: pki.leaf('api', ['api.example.test']),
    only: pki.leaf('only', ['only.example.test']),
  };
  up = await startUpstream();
  port = await freePort();
  onlyPort = await freePort();
  const id = (name: string) => `certificate/test/${name}`;
  dp = await startTestDataPlane({
    httpsPort: 0,
    initialSnapshot: snapshot(
      [
        route('api', 'u', '/', { listeners: ['listener/test/gw/api'] }),
        route('any', 'u', '/', { listeners: ['listener/test/gw/any', 'listener/test/gw/only'] }),
      ],
      [upstream('u', up.url)],
      {
        certificates: [
          certificate('a', ['a.example.test'], leaves.a),
          certificate('api', ['api.example.test'], leaves.api),
          certificate('b', ['b.example.test'], leaves.b),
          certificate('only', ['only.example.test'], leaves.only),
        ],
        listeners: [
          listener('any', port, { certificates: [id('a'), id('b')] }),
          listener('api', port, { hostname: 'api.example.test', certificates: [id('api')] }),
          listener('only', onlyPort, { hostname: 'only.example.test', certificates: [id('only')] }),
        ],
      },
    ),
  });
  await untilPort(dp, port);
  await untilPort(dp, onlyPort);
});

afterAll(async () => {
  await dp?.close();
  await up?.close();
  pki?.remove();
});

const presented = async (p: number, sni: string) => {
  const h = await handshake(p, sni, pki.ca);
  return { cn: h.cert.subject.CN, alpn: h.alpn, authorized: h.authorized };
};

describe('HTTPS listener ports', () => {
  it("presents, by SNI, the certificate of the SNI's listener that covers the name, with ALPN h2", async () => {
    expect(await presented(port, 'a.example.test')).toEqual({
      cn: 'a.example.test',
      alpn: 'h2',
      authorized: true,
    });
    expect(await presented(port, 'b.example.test')).toEqual({
      cn: 'b.example.test',
      alpn: 'h2',
      authorized: true,
    });
    expect(await presented(port, 'api.example.test')).toMatchObject({
      cn: 'api.example.test',
      authorized: true,
    });
  });

  it("presents the listener's first certificate when none of its own covers the SNI", async () => {
    expect(await presented(port, 'z.example.test')).toMatchObject({
      cn: 'a.example.test',
      authorized: false,
    });
  });

  it("presents the catch-all listener's first certificate to a client without SNI, and none on a port without one", async () => {
    // (Not `authorized`: the client checks the certificate against 127.0.0.1, the name it dialled.)
    const h = await handshake(port, null, pki.ca);
    expect({ cn: h.cert.subject.CN, alpn: h.alpn }).toEqual({ cn: 'a.example.test', alpn: 'h2' });
    await expect(handshake(onlyPort, null, pki.ca)).rejects.toThrow();
  });

  it('refuses the handshake of a name no listener of the port takes', async () => {
    await expect(handshake(onlyPort, 'a.example.test', pki.ca)).rejects.toThrow();
    expect(await presented(onlyPort, 'only.example.test')).toMatchObject({ cn: 'only.example.test' });
  });

  it('serves h2 and HTTP/1.1 over TLS, each Host on its listener', async () => {
    const session = await h2Session(`https://127.0.0.1:${port}`, {
      ca: pki.ca,
      servername: 'b.example.test',
    });
    try {
      const r = await h2Request(session, 'b.example.test', '/x');
      expect(r.status).toBe(200);
      expect(JSON.parse(r.body)).toMatchObject({ url: '/x' });
      expect(up.seen.at(-1)?.headers['x-forwarded-proto']).toBe('https');
    } finally {
      session.close();
    }
    const h1 = new Agent({ connect: { ca: pki.ca, servername: 'api.example.test' } });
    try {
      const r = await request(`https://127.0.0.1:${port}/y`, {
        dispatcher: h1,
        headers: { host: 'api.example.test' },
      });
      expect(r.statusCode).toBe(200);
      expect(((await r.body.json()) as { url: string }).url).toBe('/y');
    } finally {
      await h1.close();
    }
  });

  it("never presents a listener's certificate on the proxy's own TLS port", async () => {
    await expect(handshake(httpsPortOf(dp), 'a.example.test', pki.ca)).rejects.toThrow();
  });

  // Last: it changes the snapshot the others read.
  it("sets up its connections with TCP_NODELAY, as the proxy's own TLS port", async () => {
    // node:http2's secure server leaves Nagle's algorithm on unless told (noDelay): it held small
    // writes (an h2 frame, a response's later chunk) while earlier ones were unacknowledged.
    const [proxyTls, listenerTls] = await acceptedSockets([httpsPortOf(dp), port]);
    expect(proxyTls.noDelay).toBe(true);
    expect(listenerTls.noDelay).toBe(true);
  });

  it('serves a kept port in its new protocol once a snapshot switches it from HTTPS to HTTP', async () => {
    const r = dp.holder.apply(
      snapshot([route('only', 'u', '/', { listeners: ['listener/test/gw/only'] })], [upstream('u', up.url)], {
        listeners: [listener('only', onlyPort, { hostname: 'only.example.test' })],
      }),
    );
    expect(r.result).toBe('applied');
    const plain = await request(`http://127.0.0.1:${onlyPort}/plain`, {
      headers: { host: 'only.example.test' },
    });
    expect(plain.statusCode).toBe(200);
    await plain.body.dump();
    await expect(handshake(onlyPort, 'only.example.test', pki.ca)).rejects.toThrow();
  });
});
