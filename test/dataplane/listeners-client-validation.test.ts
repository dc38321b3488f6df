/**
 * Client certificate validation on Gateway HTTPS listener ports (table listeners'
 * clientValidation, from a Gateway's spec.tls.frontend), end to end with openssl-made
 * certificates: AllowValidOnly serves a client whose certificate the port's CA bundle verifies,
 * over HTTP/1.1 and h2, and closes the connection of one without a certificate or with one of
 * another CA before any request is served; AllowInsecureFallback serves them all; a port without
 * validation serves as before. The table refuses validation on an HTTP listener, two
 * different ones on one port, and a bundle without a certificate.
 */
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenerProblems } from '../../dataplane/config/listeners.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { type ClientLeaf, type ClientPki, makeClientPki } from '../auth/client-pki.ts';
import { h2Request, h2Session, untilPort } from '../helpers/listeners.ts';
import { freePort, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { listener, route, snapshot, upstream } from '../helpers/tables.ts';
import { makePki, type Pki } from '../tls/pki.ts';
import { certificate } from '../tls/tls-helpers.ts';

const HOST = 'mtls.example.test';
let server: Pki;
let trusted: ClientPki;
let other: ClientPki;
let good: ClientLeaf;
let stranger: ClientLeaf;
let up: Upstream;
let dp: DataPlane;
const ports = { strict: 0, fallback: 0, none: 0 };

beforeAll(async () => {
  server = makePki();
  trusted = makeClientPki('Trusted Client CA');
  other = makeClientPki('Other Client CA');
  good = trusted.leaf('good-client');
  stranger = other.leaf('stranger');
  up = await startUpstream();
  for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();
  const cert = 'certificate/test/mtls';
  const names = Object.keys(ports) as (keyof typeof ports)[];
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [route('r', 'u', '/', { listeners: names.map((n) => `listener/test/gw/${n}`) })],
      [upstream('u', up.url)],
      {
        certificates: [certificate('mtls', [HOST], server.leaf('mtls', [HOST]))],
        listeners: [
          listener('strict', ports.strict, {
            certificates: [cert],
            clientValidation: { caBundle: trusted.ca, mode: 'AllowValidOnly' },
          }),
          listener('fallback', ports.fallback, {
            certificates: [cert],
            clientValidation: { caBundle: trusted.ca, mode: 'AllowInsecureFallback' },
          }),
          listener('none', ports.none, { certificates: [cert] }),
        ],
      },
    ),
  });
  for (const p of Object.values(ports)) await untilPort(dp, p);
});

afterAll(async () => {
  await dp?.close();
  await up?.close();
  for (const p of [server, trusted, other]) p?.remove();
});

/** An HTTP/1.1 GET over TLS with this client certificate (or none): the status, or the error's code. */
async function h1(port: number, leaf?: ClientLeaf): Promise<number | string> {
  const agent = new Agent({
    connect: { ca: server.ca, servername: HOST, ...(leaf && { cert: leaf.cert, key: leaf.key }) },
  });
  try {
    const r = await request(`https://127.0.0.1:${port}/x`, { dispatcher: agent, headers: { host: HOST } });
    await r.body.dump();
    return r.statusCode;
  } catch (err) {
    return (err as { code?: string }).code ?? 'error';
  } finally {
    await agent.close();
  }
}

/** The same over h2. */
async function h2(port: number, leaf?: ClientLeaf): Promise<number | string> {
  try {
    const session = await h2Session(`https://127.0.0.1:${port}`, {
      ca: server.ca,
      servername: HOST,
      ...(leaf && { cert: leaf.cert, key: leaf.key }),
    });
    try {
      return (await h2Request(session, HOST, '/x')).status;
    } finally {
      session.close();
    }
  } catch (err) {
    return (err as { code?: string }).code ?? 'error';
  }
}

describe('client certificate validation on a Gateway HTTPS port', () => {
  it('AllowValidOnly serves a certificate of the trusted CA, over HTTP/1.1 and h2', async () => {
    expect(await h1(ports.strict, good)).toBe(200);
    expect(await h2(ports.strict, good)).toBe(200);
  });

  it('AllowValidOnly closes the connection of a client without a certificate or with one of another CA; nothing reaches the back end', async () => {
    const before = up.seen.length;
    for (const leaf of [undefined, stranger]) {
      expect(await h1(ports.strict, leaf)).not.toBe(200);
      expect(await h2(ports.strict, leaf)).not.toBe(200);
    }
    expect(up.seen.length).toBe(before);
  });

  it('AllowInsecureFallback serves every client: trusted, other CA, or none', async () => {
    for (const leaf of [good, stranger, undefined]) {
      expect(await h1(ports.fallback, leaf)).toBe(200);
      expect(await h2(ports.fallback, leaf)).toBe(200);
    }
  });

  it('a port without validation serves clients with or without a certificate, as before', async () => {
    for (const leaf of [undefined, stranger]) expect(await h1(ports.none, leaf)).toBe(200);
  });
});

describe('table validation of clientValidation', () => {
  const messages = (listeners: ReturnType<typeof listener>[]) =>
    listenerProblems(snapshot([], [], { listeners }).table, new Set(['certificate/test/mtls']), new Set())
      .filter((e) => e.field.startsWith('clientValidation'))
      .map((e) => `${e.field}: ${e.message}`);
  const v = (caBundle: string, mode: 'AllowValidOnly' | 'AllowInsecureFallback' = 'AllowValidOnly') => ({
    caBundle,
    mode,
  });
  it('refuses it on an HTTP listener, two different ones on one port, and a bundle without a certificate', () => {
    const cert = ['certificate/test/mtls'];
    expect(messages([listener('h', 1, { protocol: 'HTTP', clientValidation: v(trusted.ca) })])).toEqual([
      'clientValidation: an HTTP listener asks for no client certificate',
    ]);
    expect(
      messages([
        listener('a', 2, { certificates: cert, clientValidation: v(trusted.ca) }),
        listener('b', 2, { hostname: 'b.test', certificates: cert, clientValidation: v(other.ca) }),
      ]),
    ).toEqual(['clientValidation: differs from that of listener/test/gw/a on port 2']);
    expect(messages([listener('c', 3, { certificates: cert, clientValidation: v('not a pem') })])).toEqual([
      'clientValidation.caBundle: holds no PEM certificate, or one that does not parse',
    ]);
  });
});
