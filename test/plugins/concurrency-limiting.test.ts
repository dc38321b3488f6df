/**
 * concurrency-limiting end to end in one data plane (on 127.0.4.1), clients on 127.0.4.2 and
 * 127.0.4.3, an upstream that holds each request until the test lets it go: a client's requests
 * past perClient in progress get 429 problem+json and never reach the upstream, another client is
 * not affected, and a place is free again once a response is done or its client went away.
 */
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { createServer, type ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { until } from '../helpers/until.ts';
import { pluginInstance, route, snapshot, upstream } from '../helpers/tables.ts';

const A = new Agent({ localAddress: '127.0.4.2', connections: 16 });
const B = new Agent({ localAddress: '127.0.4.3', connections: 16 });

/** The upstream: holds every request until `releaseAll`. */
const held: ServerResponse[] = [];
let up: Server;
let dp: DataPlane;
const releaseAll = () => {
  for (const res of held.splice(0)) res.end('done');
};
beforeAll(async () => {
  up = createServer((_req, res) => {
    held.push(res);
  }).listen(0, '127.0.4.1');
  await once(up, 'listening');
  dp = await startTestDataPlane({
    host: '127.0.4.1',
    initialSnapshot: snapshot(
      [
        route('held', 'u', '/held', {
          plugins: [pluginInstance('two', 'concurrency-limiting', { perClient: 2 })],
        }),
      ],
      [upstream('u', `http://127.0.4.1:${(up.address() as AddressInfo).port}`)],
    ),
  });
});
afterAll(async () => {
  releaseAll();
  await dp.close();
  up.closeAllConnections();
  up.close();
  await Promise.all([A.close(), B.close()]);
});

const get = (dispatcher: Agent, signal?: AbortSignal) =>
  request(`${dp.proxyUrl}/held`, { dispatcher, signal }).then(async (r) => ({
    status: r.statusCode,
    type: r.headers['content-type'],
    body: await r.body.text(),
  }));

describe('concurrency-limiting', () => {
  it("past perClient requests in progress: 429 problem+json, not proxied; another client's are served", async () => {
    const first = [get(A), get(A)];
    await until(() => held.length === 2);
    const refused = await get(A);
    expect(refused.status).toBe(429);
    expect(refused.type).toBe('application/problem+json');
    expect(JSON.parse(refused.body)).toMatchObject({
      code: 'SLC_ERR_RATE_LIMITED',
      detail: '2 requests of this client are in progress on this route',
    });
    expect(held.length).toBe(2);
    const other = get(B);
    await until(() => held.length === 3);
    releaseAll();
    expect((await Promise.all([...first, other])).map((r) => r.status)).toEqual([200, 200, 200]);
    // Done: the client's places are free again.
    const again = [get(A), get(A)];
    await until(() => held.length === 2);
    releaseAll();
    expect((await Promise.all(again)).map((r) => r.status)).toEqual([200, 200]);
  });

  it('a client that goes away frees its place', async () => {
    const gone = new AbortController();
    const abandoned = get(A, gone.signal).catch((err: Error) => err.name);
    const kept = get(A);
    await until(() => held.length === 2);
    gone.abort();
    expect(await abandoned).toBe('AbortError');
    // Its place is free once the data plane sees the client gone (the upstream never answered it):
    // a request then is admitted (held at the upstream) rather than refused.
    let third: ReturnType<typeof get> | undefined;
    for (let i = 0; i < 30 && third === undefined; i++) {
      const attempt = get(A);
      const r = await Promise.race([attempt, sleep(100).then(() => null)]);
      if (r === null) third = attempt;
      else expect(r.status).toBe(429);
    }
    expect(third).toBeDefined();
    expect(held.length).toBe(3);
    releaseAll();
    expect((await kept).status).toBe(200);
    expect((await third!).status).toBe(200);
  });
});
