/**
 * 1,000 aggregated requests at once, each with two answering calls and an optional call that
 * times out: every answer complete, and nothing left behind. Two rounds; after the second, the
 * process holds no more timers, sockets or heap than after the first (a leak grows per round),
 * and the upstream saw no more connections than the pools allow (reused, not one per call).
 * A timed-out call still queued is withdrawn, not sent later.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { gatewayRoute, snapshotOf } from './helpers.ts';

const N = 1_000;
/** The connections of an upstream's endpoint (dataplane/upstream/endpoint.ts). */
const POOL_CONNECTIONS = 256;
let up: Upstream;
let dp: DataPlane;
let client: Agent;
let upstreamConnections = 0;

setFlagsFromString('--expose-gc');
const gc = (globalThis.gc ?? runInNewContext('gc')) as () => void;

beforeAll(async () => {
  up = await startUpstream((req, res) => {
    if (!req.url?.startsWith('/slow')) return false;
    const t = setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'), 30_000);
    res.on('close', () => clearTimeout(t));
    return true;
  });
  up.server.on('connection', () => upstreamConnections++);
  // Idle connections outlive the test on every side, so the socket counts of the two rounds are
  // taken alike (a keep-alive expiring between them would make them differ either way).
  up.server.keepAliveTimeout = 60_000;
  const call = (name: string, path: string, extra: Record<string, unknown> = {}) => ({
    name,
    url: up.url,
    path,
    ...extra,
  });
  dp = await startTestDataPlane({
    initialSnapshot: snapshotOf([
      gatewayRoute('many', [
        {
          name: 'profile',
          paths: ['/profile'],
          aggregate: {
            pattern: '/profile/{id}',
            timeout: '30s',
            calls: [
              call('user', '/users/{{ path.id }}'),
              call('orders', '/users/{{ path.id }}/orders'),
              call('late', '/slow/{{ path.id }}', { timeout: '100ms', required: false }),
            ],
          },
        },
      ]),
    ]),
  });
  client = new Agent({ connections: N, keepAliveTimeout: 60_000, keepAliveMaxTimeout: 60_000 });
  up.seen.length = 0;
});

afterAll(async () => {
  await client?.close();
  await dp?.close();
  await up?.close();
});

async function round(): Promise<void> {
  const answers = await Promise.all(
    Array.from({ length: N }, async (_, i) => {
      const r = await request(`${dp.proxyUrl}/profile/${i}`, { dispatcher: client });
      return { status: r.statusCode, body: (await r.body.json()) as Record<string, unknown> };
    }),
  );
  answers.forEach((a, i) => {
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({
      user: { url: `/users/${i}` },
      orders: { url: `/users/${i}/orders` },
      late: null,
    });
  });
}

function resources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) counts[r] = (counts[r] ?? 0) + 1;
  return counts;
}

/**
 * Active resources by type once the process is quiet. Timed-out calls are torn down at their
 * 100 ms deadline and closed sockets take a moment to go: wait until the upstream's count of calls
 * holds still, no timer is left and the socket count holds still (or 8 s: a timer of an
 * aggregation, leaked, would live 30 s).
 */
async function quiet() {
  for (let seen = -1, i = 0; i < 20 && up.seen.length !== seen; i++) {
    seen = up.seen.length;
    await sleep(300);
  }
  let last = -1;
  let still = 0;
  for (let i = 0; i < 40 && still < 3; i++) {
    await sleep(200);
    const r = resources();
    still = !r.Timeout && r.TCPSocketWrap === last ? still + 1 : 0;
    last = r.TCPSocketWrap ?? 0;
  }
  gc();
  return { counts: resources(), heap: process.memoryUsage().heapUsed };
}

it('1,000 concurrent aggregated requests leave no sockets, timers or heap behind', {
  timeout: 60_000,
}, async () => {
  const late = () => up.seen.filter((s) => s.url.startsWith('/slow')).length;
  await round();
  const first = await quiet();
  const connectionsAfterFirst = upstreamConnections;
  // Every answering call made; of the late ones, those still queued in their pool (or waiting
  // for a connection) when their time was up were withdrawn, never sent (checked on its own in
  // test/dataplane/upstream-abort.test.ts: here the pool is seldom full).
  expect(up.seen.length - late()).toBe(2 * N);
  expect(late()).toBeLessThanOrEqual(N);
  await round();
  const second = await quiet();
  expect(up.seen.length - late()).toBe(2 * 2 * N);
  expect(late()).toBeLessThanOrEqual(2 * N);

  // No timer of the aggregations (3,000 per round, 30 s for the answering calls) outlives its request.
  expect(first.counts.Timeout ?? 0).toBe(0);
  expect(second.counts.Timeout ?? 0).toBe(0);
  // Sockets: the kept-alive ones of the pool and the client, not more per round than the pool may
  // hold idle (it keeps the connections it opened for calls withdrawn meanwhile), each of them two
  // sockets in this process (the pool's and the upstream's); a socket leaked per call would be
  // N more.
  expect(second.counts.TCPSocketWrap ?? 0).toBeLessThanOrEqual(
    (first.counts.TCPSocketWrap ?? 0) + 2 * POOL_CONNECTIONS + 10,
  );
  // The two answering calls share one pool and reuse its connections; each timed-out call costs its socket.
  expect(connectionsAfterFirst).toBeLessThanOrEqual(POOL_CONNECTIONS + N);
  expect(upstreamConnections - connectionsAfterFirst).toBeLessThanOrEqual(N + POOL_CONNECTIONS);
  // Heap roughly flat: 1,000 aggregations hold ~MBs while running; a leak would keep them.
  expect(second.heap - first.heap).toBeLessThan(8 * 1024 * 1024);
});
