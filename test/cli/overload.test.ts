/**
 * Overload protection on a real `sluice run --max-in-flight 5`: with five requests held by a
 * slow upstream, the sixth is shed at once (503 problem+json SLC_ERR_OVERLOADED, Retry-After),
 * never reaching the upstream, counted in sluice_requests_shed_total; once the five are done the
 * process admits again. WebSocket upgrades are not counted against the bound.
 */
import { connect } from 'node:net';
import { once } from 'node:events';
import { request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { metricValue, type SluiceProcess, startSluice } from '../helpers/processes.ts';
import { startUpstream, type Upstream } from '../helpers/servers.ts';

let up: Upstream;
let gw: SluiceProcess;
const held: (() => void)[] = [];

beforeAll(async () => {
  up = await startUpstream((req, res) => {
    if (req.url !== '/slow') return false;
    held.push(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('done'));
    return true;
  });
  gw = await startSluice({
    yaml: `apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: shed, namespace: default }
spec:
  service: { name: shed, url: "${up.url}" }
  routes:
    - name: all
      paths: ["/"]
`,
    args: ['--max-in-flight', '5'],
  });
});
afterAll(async () => {
  for (const release of held.splice(0)) release();
  await gw?.stop();
  await up?.close();
});

it('the 6th concurrent request gets 503 problem+json with Retry-After at once, without touching the upstream', async () => {
  const five = Array.from({ length: 5 }, () =>
    request(`${gw.proxyUrl}/slow`).then(async (r) => [r.statusCode, await r.body.text()]),
  );
  await expect.poll(() => held.length, { timeout: 5_000 }).toBe(5);
  const seen = up.seen.length;

  const t0 = Date.now();
  const r = await request(`${gw.proxyUrl}/slow`);
  const took = Date.now() - t0;
  const body = (await r.body.json()) as Record<string, unknown>;
  expect(r.statusCode).toBe(503);
  expect(r.headers['content-type']).toBe('application/problem+json');
  expect(r.headers['retry-after']).toBe('1');
  expect(body).toMatchObject({ code: 'SLC_ERR_OVERLOADED', status: 503 });
  // Answered without waiting on anything (the held requests wait for the test); a generous bound.
  expect(took).toBeLessThan(1_000);
  expect(up.seen.length).toBe(seen);

  // A WebSocket upgrade is not counted against the bound: it reaches the route (and its upstream).
  const ws = connect(gw.proxyPort, '127.0.0.1');
  await once(ws, 'connect');
  ws.write(
    'GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
      'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
  );
  const [reply] = (await once(ws, 'data')) as [Buffer];
  ws.destroy();
  // The test upstream answers a plain 200 to the handshake: the gateway's own 502, not a 503 shed.
  expect(reply.toString()).not.toMatch(/^HTTP\/1\.1 503/);

  const metrics = await (await request(`${gw.adminUrl}/metrics`)).body.text();
  expect(metricValue(metrics, 'sluice_requests_shed_total', { reason: 'max_in_flight' })).toBe(1);

  for (const release of held.splice(0)) release();
  expect(await Promise.all(five)).toEqual(Array(5).fill([200, 'done']));
  const again = await request(`${gw.proxyUrl}/fast`);
  expect(again.statusCode).toBe(200);
  await again.body.text();
});
