/**
 * 1,000 translated requests at once, every other one failing with NOT_FOUND: every answer
 * complete and its own (the id in the answer is the one asked for), all over the one channel
 * (the service sees one HTTP/2 connection), and a second round leaves no more timers or heap
 * behind than the first.
 */
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { gatewayRoute, rule, snapshotOf } from './helpers.ts';
import { startGrpcServer, type TestGrpcServer } from './server.ts';

const N = 1_000;
let srv: TestGrpcServer;
let dp: DataPlane;
let client: Agent;

setFlagsFromString('--expose-gc');
const gc = (globalThis.gc ?? runInNewContext('gc')) as () => void;

beforeAll(async () => {
  srv = await startGrpcServer();
  dp = await startTestDataPlane({
    initialSnapshot: snapshotOf([
      gatewayRoute('many', srv.url, [rule('get', '/items', 'GetItem', { pattern: '/items/{item_id}' })]),
    ]),
  });
  client = new Agent({ connections: N });
});

afterAll(async () => {
  await client?.close();
  await dp?.close();
  await srv?.close();
});

async function round(): Promise<void> {
  const answers = await Promise.all(
    Array.from({ length: N }, async (_, i) => {
      const id = i % 2 ? `item-${i}` : 'missing';
      const r = await request(`${dp.proxyUrl}/items/${id}`, { dispatcher: client });
      return { i, status: r.statusCode, json: (await r.body.json()) as Record<string, unknown> };
    }),
  );
  for (const a of answers)
    if (a.i % 2) {
      expect(a.status).toBe(200);
      expect(a.json.itemId).toBe(`item-${a.i}`);
    } else {
      expect(a.status).toBe(404);
      expect(a.json.grpcStatus).toBe('NOT_FOUND');
    }
}

const timers = () =>
  (process as unknown as { getActiveResourcesInfo(): string[] })
    .getActiveResourcesInfo()
    .filter((r) => r === 'Timeout').length;

it('answers 1,000 concurrent requests over one channel, twice, leaving nothing behind', async () => {
  const before = srv.calls.GetItem ?? 0;
  await round();
  gc();
  const afterFirst = { timers: timers(), heap: process.memoryUsage().heapUsed };
  await round();
  gc();
  expect(srv.calls.GetItem).toBe(before + 2 * N);
  expect(srv.connections()).toBe(1);
  expect(timers()).toBeLessThanOrEqual(afterFirst.timers);
  expect(process.memoryUsage().heapUsed).toBeLessThan(afterFirst.heap + 8 * 1024 * 1024);
}, 60_000);
