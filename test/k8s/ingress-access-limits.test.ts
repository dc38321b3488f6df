/**
 * ingress-nginx's whitelist-source-range / denylist-source-range, proxy-body-size,
 * limit-connections and canary-by-header-pattern on a real API server (KUBECONFIG), served by a
 * real controller and two data planes (127.0.4.1 and 127.0.4.2, as two pods) to echo back ends of
 * this process (127.0.4.11–12, the pods of two Services whose EndpointSlices the test writes:
 * kapi runs no controllers). Clients connect from their own loopback addresses (127.0.4.5 and
 * 127.0.4.6), so the data planes see two client addresses.
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Controller } from '../../controller/main.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { expectRequest } from '../gateway-api/env.ts';
import {
  crdsAndNamespace,
  serviceWithPods,
  startControllerIn,
  startDataPlanesIn,
} from '../helpers/controller-on-kapi.ts';
import { type EchoServer, startEcho } from '../helpers/gateway-api/echo.ts';
import { deleteAll, kubectl, ok } from '../helpers/kubectl.ts';
import { freePort } from '../helpers/servers.ts';
import { waitFor } from '../helpers/until.ts';

const NS = `sluice-ingress-al-${randomBytes(3).toString('hex')}`;
const PLANES = ['127.0.4.1', '127.0.4.2'];
const PODS = { web: '127.0.4.11', next: '127.0.4.12' };
/** Two clients, by the address they connect from (undici's Client option). */
const OFFICE = new Agent({ localAddress: '127.0.4.5', connections: 8 });
const STRANGER = new Agent({ localAddress: '127.0.4.6', connections: 8 });

let planes: DataPlane[];
let controller: Controller;
const echoes: EchoServer[] = [];

/** An Ingress of path "/" on <name>.example.test (or `host`) to `backend`, with these annotations (after the prefix). */
const ingress = (
  name: string,
  annotations: Record<string, string>,
  backend = 'web',
  host = `${name}.example.test`,
) => `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: ${name}
  annotations: {${Object.entries(annotations)
    .map(([k, v]) => ` nginx.ingress.kubernetes.io/${k}: ${JSON.stringify(v)}`)
    .join(',')} }
spec:
  ingressClassName: sluice
  rules:
    - host: ${host}
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: ${backend}, port: { number: 80 } } } }] }
`;

const apply = (yaml: string) => ok(['apply', '-n', NS, '-f', '-'], yaml);
const proxies = () => planes.map((p) => p.proxyUrl);

interface Answer {
  status: number;
  type: string | undefined;
  body: string;
}
const send = async (
  url: string,
  host: string,
  o: { from?: Agent; method?: string; body?: Buffer | Readable; headers?: Record<string, string> } = {},
): Promise<Answer> => {
  const r = await request(url, {
    method: (o.method ?? 'GET') as 'GET',
    headers: { host, ...o.headers },
    body: o.body,
    dispatcher: o.from ?? OFFICE,
  });
  const body = await r.body.text();
  return { status: r.statusCode, type: r.headers['content-type'] as string | undefined, body };
};
/** Waits until every data plane answers `path` of `host` with `status` (the Ingress is served), then returns the answers. */
const served = (host: string, path: string, status: number, o: Parameters<typeof send>[2] = {}) =>
  waitFor(
    `${host}${path} answered ${status} by every data plane`,
    () => Promise.all(proxies().map((u) => send(`${u}${path}`, host, o))),
    (rs) => rs.every((r) => r.status === status),
  );
const code = (a: Answer) => (JSON.parse(a.body) as { code: string }).code;

beforeAll(async () => {
  await crdsAndNamespace(NS);
  const port = await freePort();
  for (const [svc, host] of Object.entries(PODS))
    echoes.push(await startEcho({ host, port, namespace: NS, pod: `${svc}-1` }));
  planes = await startDataPlanesIn(NS, PLANES, { adminToken: 'access-limits-token' });
  await apply(`${serviceWithPods('web', [echoes[0]])}\n---\n${serviceWithPods('next', [echoes[1]])}`);
  controller = await startControllerIn(NS, 'access-limits-token', 'sluice-ingress-access-limits');
}, 60_000);

afterAll(async () => {
  await controller?.close();
  await Promise.all((planes ?? []).map((p) => p.close()));
  await Promise.all(echoes.map((e) => e.close()));
  await Promise.all([OFFICE.close(), STRANGER.close()]);
  // kapi leaves a deleted namespace's objects in place: keep later controllers from serving them.
  await deleteAll('ingress', NS).catch(() => '');
  await kubectl(['delete', 'namespace', NS, '--wait=false']);
});

describe('Ingress source ranges', () => {
  it('whitelist-source-range serves its ranges only; denylist-source-range refuses within them: 403 problem+json', async () => {
    await apply(
      ingress('ranges', {
        'whitelist-source-range': '127.0.4.0/29, 2001:db8::/32',
        'denylist-source-range': '127.0.4.6',
      }),
    );
    const host = 'ranges.example.test';
    for (const r of await served(host, '/', 200)) expect(JSON.parse(r.body).pod).toBe('web-1');
    const refused = await served(host, '/', 403, { from: STRANGER });
    for (const r of refused) {
      expect(r.type).toBe('application/problem+json');
      expect(code(r)).toBe('SLC_ERR_ADDRESS_REFUSED');
    }
    // The stranger (.6) is in the whitelist's range but denied; an Ingress allowing only 10/8
    // refuses both clients.
    await apply(ingress('intranet', { 'whitelist-source-range': '10.0.0.0/8' }));
    await served('intranet.example.test', '/', 403);
    await served('intranet.example.test', '/', 403, { from: STRANGER });
  });

  it('a range that does not parse is reported (Event naming the annotation and value); the Ingress keeps serving without it', async () => {
    await apply(ingress('bad-range', { 'whitelist-source-range': '127.0.4.0/40' }));
    await served('bad-range.example.test', '/', 200, { from: STRANGER });
    const events = await waitFor(
      'an InvalidAnnotation Event on bad-range',
      async () =>
        (
          JSON.parse(await ok(['get', 'events', '-n', NS, '-o', 'json'])) as {
            items: { type: string; reason: string; message: string; involvedObject: { name: string } }[];
          }
        ).items.filter((e) => e.involvedObject.name === 'bad-range' && e.reason === 'InvalidAnnotation'),
      (items) => items.length === 1,
    );
    expect(events[0].type).toBe('Warning');
    expect(events[0].message).toContain('nginx.ingress.kubernetes.io/whitelist-source-range: "127.0.4.0/40"');
  });
});

describe('Ingress proxy-body-size', () => {
  it('413 problem+json over the size (Content-Length, and chunked as it streams); at it the back end gets the body', async () => {
    await apply(ingress('body', { 'proxy-body-size': '1k' }));
    const host = 'body.example.test';
    await served(host, '/', 200, { method: 'POST', body: Buffer.alloc(1024, 'a') });
    for (const r of await served(host, '/', 413, { method: 'POST', body: Buffer.alloc(1025, 'a') })) {
      expect(r.type).toBe('application/problem+json');
      expect(code(r)).toBe('SLC_ERR_BODY_TOO_LARGE');
    }
    // Chunked (no Content-Length): cut off past 1 KiB while the echo waits (?delay) to answer.
    const chunked = () =>
      Readable.from(
        (function* () {
          for (let i = 0; i < 16; i++) yield Buffer.alloc(256, 'a');
        })(),
      );
    for (const u of proxies()) {
      const r = await send(`${u}/?delay=1s`, host, { method: 'POST', body: chunked() });
      expect(r.status).toBe(413);
      expect(code(r)).toBe('SLC_ERR_BODY_TOO_LARGE');
    }
  });
});

describe('Ingress limit-connections', () => {
  it("past N requests of one client in progress: 429 problem+json; another client's are served", async () => {
    await apply(ingress('conns', { 'limit-connections': '2' }));
    const host = 'conns.example.test';
    await served(host, '/', 200);
    const path = `/?delay=1500ms&held=${randomBytes(3).toString('hex')}`;
    const held = [send(`${planes[0].proxyUrl}${path}`, host), send(`${planes[0].proxyUrl}${path}`, host)];
    // Both in progress at the echo (it waits 1.5 s before answering): the third of the client is refused.
    await waitFor(
      'both requests held at the echo',
      () => echoes[0].requests.filter((r) => r.path === path).length,
      (n) => n === 2,
      1_000,
      10,
    );
    const third = await send(`${planes[0].proxyUrl}/`, host);
    expect(third.status).toBe(429);
    expect(code(third)).toBe('SLC_ERR_RATE_LIMITED');
    expect((await send(`${planes[0].proxyUrl}/`, host, { from: STRANGER })).status).toBe(200);
    expect((await Promise.all(held)).map((r) => r.status)).toEqual([200, 200]);
    // Done: the client's places are free again.
    expect((await send(`${planes[0].proxyUrl}/`, host)).status).toBe(200);
  });
});

describe('Ingress canary-by-header-pattern', () => {
  it('requests whose header matches the pattern (anywhere in the value) go to the canary; others to main', async () => {
    const canary = {
      canary: 'true',
      'canary-by-header': 'X-Canary',
      'canary-by-header-pattern': '^(beta|team-[a-z]+)$',
    };
    await apply(
      `${ingress('pattern', {})}\n---\n${ingress('pattern-canary', canary, 'next', 'pattern.example.test')}`,
    );
    const as = (value?: string) => ({
      headers: { host: 'pattern.example.test', ...(value && { 'x-canary': value }) },
    });
    await expectRequest(proxies(), '/a', { namespace: NS, backend: 'next' }, as('beta'));
    await expectRequest(proxies(), '/a', { namespace: NS, backend: 'next' }, as('team-blue'));
    await expectRequest(proxies(), '/a', { namespace: NS, backend: 'web' }, as('Beta'));
    await expectRequest(proxies(), '/a', { namespace: NS, backend: 'web' }, as('team-42'));
    // No "always"/"never" reading with a pattern: "always" is just a value that does not match.
    await expectRequest(proxies(), '/a', { namespace: NS, backend: 'web' }, as('always'));
    await expectRequest(proxies(), '/a', { namespace: NS, backend: 'web' }, as());
  });
});
