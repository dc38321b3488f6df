/**
 * The TLS listener end to end, with openssl-made certificates: SNI picks the route certificate
 * (exact and wildcard) or the default, a new snapshot's certificate is served on new
 * connections while open ones keep working, curl over h2 gets the same answers as over
 * HTTP/1.1, and httpsRedirect sends cleartext clients to https.
 */
import { X509Certificate } from 'node:crypto';
import { Readable } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { Agent, buildConnector, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, upstream } from '../helpers/tables.ts';
import { type Leaf, makePki, type Pki } from './pki.ts';
import { certificate, curl, handshake, tlsSnapshot } from './tls-helpers.ts';

let pki: Pki;
let leaves: Record<'a' | 'b' | 'wild' | 'fallback' | 'a2', Leaf>;
let echo: Upstream;
let dp: DataPlane;
let httpsPort: number;
let httpPort: number;

const routes = () => [
  route('api', 'echo', '/api'),
  route('moved', 'echo', '/moved', { type: 'Exact' }),
  route('secure', 'echo', '/secure', { httpsRedirect: true }),
  route('hop', 'echo', '/hop', { type: 'Exact' }),
];
const snapshotWith = (aLeaf: Leaf, u: Upstream) =>
  tlsSnapshot(
    routes(),
    [upstream('echo', u.url)],
    [
      certificate('a', ['a.example.test'], aLeaf),
      certificate('b', ['b.example.test'], leaves.b),
      certificate('wild', ['*.wild.example.test'], leaves.wild),
    ],
  );

beforeAll(async () => {
  pki = makePki();
  leaves = {
    a: pki.leaf('a', ['a.example.test']),
    a2: pki.leaf('a2', ['a.example.test']),
    b: pki.leaf('b', ['b.example.test']),
    wild: pki.leaf('wild', ['*.wild.example.test']),
    fallback: pki.leaf('fallback', ['default.example.test']),
  };
  echo = await startUpstream((req, res) => {
    if (req.url === '/moved') {
      res.writeHead(302, { location: '/api/elsewhere', 'content-length': '0' });
      res.end();
      return true;
    }
    if (req.url === '/hop') {
      // Connection-specific headers node:http2 refuses to send: the gateway must drop them.
      res.writeHead(200, {
        connection: 'keep-alive',
        'keep-alive': 'timeout=5',
        'content-type': 'text/plain',
      });
      res.end('hop');
      return true;
    }
  });
  dp = await startTestDataPlane({
    maxBodyBytes: 1024,
    httpsPort: 0,
    tlsDefault: { certFile: leaves.fallback.certFile, keyFile: leaves.fallback.keyFile },
    initialSnapshot: snapshotWith(leaves.a, echo),
  });
  httpsPort = Number(new URL(dp.httpsUrl).port);
  httpPort = Number(new URL(dp.proxyUrl).port);
});

afterAll(async () => {
  await dp?.close();
  await echo?.close();
  pki?.remove();
});

describe('SNI', () => {
  it('presents the certificate of the host named, exact or wildcard, else the default', async () => {
    const cn = async (name: string | null) => (await handshake(httpsPort, name, pki.ca)).cert.subject.CN;
    expect(await cn('a.example.test')).toBe('a.example.test');
    expect(await cn('B.Example.Test')).toBe('b.example.test');
    expect(await cn('x.wild.example.test')).toBe('*.wild.example.test');
    // One label only: a.b.wild.example.test is not covered by *.wild.example.test.
    expect(await cn('a.b.wild.example.test')).toBe('default.example.test');
    expect(await cn('unknown.example.test')).toBe('default.example.test');
    expect(await cn(null)).toBe('default.example.test');
    const a = await handshake(httpsPort, 'a.example.test', pki.ca);
    expect(a.authorized).toBe(true);
    expect(a.cert.subjectaltname).toBe('DNS:a.example.test');
    expect(a.alpn).toBe('h2');
  });

  it('refuses TLS 1.1 and below', async () => {
    const { connect } = await import('node:tls');
    const err = await new Promise<Error>((resolve) => {
      const s = connect({
        host: '127.0.0.1',
        port: httpsPort,
        servername: 'a.example.test',
        ca: pki.ca,
        maxVersion: 'TLSv1.1',
        minVersion: 'TLSv1',
      });
      s.once('error', resolve);
      s.once('secureConnect', () => resolve(new Error('connected')));
    });
    expect(err.message).not.toBe('connected');
  });
});

describe('h2 and HTTP/1.1 give the same answers (curl)', () => {
  const both = async (path: string, extra: string[] = []) => {
    const h1 = await curl('--http1.1', 'a.example.test', httpsPort, path, pki.caFile, extra);
    const h2 = await curl('--http2', 'a.example.test', httpsPort, path, pki.caFile, extra);
    expect(h1.version).toBe('1.1');
    expect(h2.version).toBe('2');
    expect(h2.status).toBe(h1.status);
    for (const name of ['content-type', 'content-length', 'location'])
      expect(h2.headers[name], name).toBe(h1.headers[name]);
    expect(h2.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(h2.headers.connection).toBeUndefined();
    return { h1, h2 };
  };

  it('GET: the same body; the upstream sees https, the host and HTTP/1.1', async () => {
    const { h1, h2 } = await both('/api/items?x=1');
    expect(h2.status).toBe(200);
    const [b1, b2] = [JSON.parse(h1.body), JSON.parse(h2.body)];
    expect(b2.url).toBe('/api/items?x=1');
    expect(b2.url).toBe(b1.url);
    expect(b2.headers['x-forwarded-proto']).toBe('https');
    expect(b2.headers['x-forwarded-for']).toBe('127.0.0.1'); // the h2 session's peer
    expect(b2.headers.forwarded).toMatch(/proto=https$/);
    expect(b2.headers['x-forwarded-host']).toBe(`a.example.test:${httpsPort}`);
    expect(b2.headers.host).toBe(b1.headers.host);
    expect(Object.keys(b2.headers).filter((k) => k.startsWith(':'))).toEqual([]);
  });

  it('POST: the body reaches the upstream the same way', async () => {
    const { h1, h2 } = await both('/api/charges', [
      '-H',
      'content-type: application/json',
      '--data-binary',
      '{"amount":100}',
    ]);
    expect(h2.status).toBe(200);
    expect(JSON.parse(h2.body).method).toBe('POST');
    expect(JSON.parse(h2.body).body).toBe('{"amount":100}');
    expect(JSON.parse(h1.body).body).toBe('{"amount":100}');
  });

  it('a 404 is the same problem+json', async () => {
    const { h1, h2 } = await both('/nowhere');
    expect(h2.status).toBe(404);
    expect(h2.headers['content-type']).toBe('application/problem+json');
    const [p1, p2] = [JSON.parse(h1.body), JSON.parse(h2.body)];
    expect(p2.code).toBe('SLC_ERR_ROUTE_NOT_FOUND');
    expect({ ...p2, requestId: 0 }).toEqual({ ...p1, requestId: 0 });
  });

  it("an upstream's redirect, and a response with connection-specific headers", async () => {
    const moved = await both('/moved');
    expect(moved.h2.status).toBe(302);
    expect(moved.h2.headers.location).toBe('/api/elsewhere');
    const hop = await both('/hop');
    expect(hop.h2.status).toBe(200);
    expect(hop.h2.body).toBe('hop');
    expect(hop.h2.headers['keep-alive']).toBeUndefined();
  });

  it('a method we do not proxy gets 405 over h2 too (no Connection header on h2)', async () => {
    const h2 = await curl('--http2', 'a.example.test', httpsPort, '/api', pki.caFile, [
      '-X',
      'CONNECT',
    ]).catch(() => null);
    // curl may refuse to send CONNECT as a plain request; PROPFIND is a method we do not proxy either.
    const r =
      h2 ?? (await curl('--http2', 'a.example.test', httpsPort, '/api', pki.caFile, ['-X', 'PROPFIND']));
    expect(r.version).toBe('2');
    expect(r.status).toBe(405);
    expect(r.headers.allow).toContain('GET');
  });
});

describe('httpsRedirect', () => {
  it('answers 308 to https on the cleartext listener, keeping path and query; serves on the TLS listener', async () => {
    const plain = await curl(
      '--http1.1',
      'a.example.test',
      httpPort,
      '/secure/x?y=1&z',
      pki.caFile,
      [],
      'http',
    );
    expect(plain.status).toBe(308);
    expect(plain.headers.location).toBe('https://a.example.test/secure/x?y=1&z');
    expect(echo.seen.some((s) => s.url.startsWith('/secure'))).toBe(false);
    const tls = await curl('--http2', 'a.example.test', httpsPort, '/secure/x?y=1&z', pki.caFile);
    expect(tls.status).toBe(200);
    expect(JSON.parse(tls.body).url).toBe('/secure/x?y=1&z');
    // Routes without it are served on both.
    expect((await curl('--http1.1', 'a.example.test', httpPort, '/api', pki.caFile, [], 'http')).status).toBe(
      200,
    );
  });
});

describe('certificate rotation', () => {
  /** An agent whose TLS connections are counted and kept, to see which connection served what. */
  const trackedAgent = (allowH2: boolean) => {
    const sockets: TLSSocket[] = [];
    const base = buildConnector({ ca: pki.ca, servername: 'a.example.test', allowH2 });
    const connect: buildConnector.connector = (o, cb) =>
      base(o, (err, socket) => {
        if (socket) sockets.push(socket as TLSSocket);
        (cb as (e: Error | null, s: typeof socket) => void)(err, socket);
      });
    const agent = new Agent({ connect, allowH2, keepAliveTimeout: 30_000 });
    return { agent, sockets };
  };

  it('a new snapshot is served on new connections; open h2 and HTTP/1.1 connections keep theirs and keep working', async () => {
    const h2 = trackedAgent(true);
    const h1 = trackedAgent(false);
    const url = `${dp.httpsUrl}/api/rotate`;
    const headers = { host: `a.example.test:${httpsPort}` };
    const get = async (agent: Agent) => {
      const r = await request(url, { dispatcher: agent, headers });
      await r.body.text();
      return r.statusCode;
    };
    const fingerprint = (s: TLSSocket) => s.getPeerCertificate().fingerprint256;
    try {
      expect(await get(h2.agent)).toBe(200);
      expect(await get(h1.agent)).toBe(200);
      expect(h2.sockets[0].alpnProtocol).toBe('h2');
      expect(h1.sockets[0].alpnProtocol).toBe('http/1.1');
      const before = new X509Certificate(leaves.a.cert).fingerprint256;
      expect(fingerprint(h2.sockets[0])).toBe(before);

      expect(dp.holder.apply(snapshotWith(leaves.a2, echo)).result).toBe('applied');
      const after = (await handshake(httpsPort, 'a.example.test', pki.ca)).cert;
      expect(after.fingerprint256).toBe(new X509Certificate(leaves.a2.cert).fingerprint256);

      const seenBefore = echo.seen.length;
      for (let i = 0; i < 3; i++) {
        expect(await get(h2.agent)).toBe(200);
        expect(await get(h1.agent)).toBe(200);
      }
      expect(echo.seen.length).toBe(seenBefore + 6);
      // Served on the connections opened before the swap, which still hold the old certificate.
      expect(h2.sockets).toHaveLength(1);
      expect(h1.sockets).toHaveLength(1);
      expect(fingerprint(h2.sockets[0])).toBe(before);
      expect(fingerprint(h1.sockets[0])).toBe(before);
    } finally {
      await h2.agent.close();
      await h1.agent.close();
      dp.holder.apply(snapshotWith(leaves.a, echo));
    }
  });
});

describe('snapshots with certificates the data plane cannot use', () => {
  it('are refused naming the certificate and field; the running snapshot stays', () => {
    const running = dp.holder.hash;
    const bad = tlsSnapshot(
      routes(),
      [upstream('echo', echo.url)],
      [{ ...certificate('a', ['a.example.test'], leaves.a), key: leaves.b.key }],
    );
    const r1 = dp.holder.apply(bad);
    expect(r1.result).toBe('rejected');
    expect(JSON.stringify(r1)).toContain('certificate/test/a: the certificate or key cannot be used');
    const twice = tlsSnapshot(
      routes(),
      [upstream('echo', echo.url)],
      [certificate('a', ['a.example.test'], leaves.a), certificate('a2', ['a.example.test'], leaves.a2)],
    );
    const r2 = dp.holder.apply(twice);
    expect(r2).toEqual({
      result: 'rejected',
      errors: [
        {
          id: 'certificate/test/a2',
          field: 'hosts[0]',
          message: 'host a.example.test is already served by certificate/test/a',
        },
      ],
    });
    expect(dp.holder.hash).toBe(running);
  });
});

describe('h2 request bodies', () => {
  const h2 = () => new Agent({ connect: { ca: pki.ca, servername: 'a.example.test' }, allowH2: true });
  const headers = () => ({ host: `a.example.test:${httpsPort}` });

  it('a body without content-length (DATA frames until END_STREAM) reaches the upstream whole', async () => {
    const agent = h2();
    try {
      const body = Readable.from([Buffer.from('part one, '), Buffer.from('part two')]);
      const r = await request(`${dp.httpsUrl}/api/stream-body`, {
        dispatcher: agent,
        method: 'POST',
        headers: headers(),
        body,
      });
      expect(r.statusCode).toBe(200);
      const seen = (await r.body.json()) as { body: string; headers: Record<string, string> };
      expect(seen.body).toBe('part one, part two');
      expect(seen.headers['content-length'] ?? seen.headers['transfer-encoding']).toBeDefined();
    } finally {
      await agent.close();
    }
  });

  it('a body over --max-body-bytes gets 413 problem+json on its stream; the session stays usable', async () => {
    const agent = h2();
    try {
      const big = await request(`${dp.httpsUrl}/api/big`, {
        dispatcher: agent,
        method: 'POST',
        headers: headers(),
        body: Buffer.alloc(4096, 'x'),
      });
      expect(big.statusCode).toBe(413);
      expect(big.headers['content-type']).toBe('application/problem+json');
      await big.body.text();
      const next = await request(`${dp.httpsUrl}/api/after`, { dispatcher: agent, headers: headers() });
      expect(next.statusCode).toBe(200);
      await next.body.text();
    } finally {
      await agent.close();
    }
  });
});
