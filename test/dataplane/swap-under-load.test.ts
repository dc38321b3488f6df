/**
 * Swapping configs under constant load: PUT /config every 100 ms for 10 s (alternating
 * snapshots that move a route between two upstream ids, so pools are retired and created)
 * while clients send requests non-stop and a WebSocket stays open. Zero failures allowed.
 */
import { once } from 'node:events';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';
import { startWsUpstream } from '../helpers/ws-upstream.ts';

let up: Upstream;
let ws: Awaited<ReturnType<typeof startWsUpstream>>;
let dp: DataPlane;

const snap = (n: number) =>
  snapshot(
    [
      route('api', `u${n % 2}`, '/api'),
      route('live', 'ws', '/live'),
      route(`extra${n % 3}`, 'u0', `/extra${n % 3}`),
    ],
    [upstream('u0', up.url), upstream('u1', `${up.url}/`), upstream('ws', ws.url)],
  );

beforeAll(async () => {
  up = await startUpstream((_req, res) => {
    res.end('ok');
    return true;
  });
  ws = await startWsUpstream();
  dp = await startTestDataPlane({ initialSnapshot: snap(0) });
});
afterAll(async () => {
  await dp.close();
  await up.close();
  await ws.close();
});

it('fails no request and drops no WebSocket while the config changes every 100 ms for 10 s', async () => {
  const client = new WebSocket(`${dp.proxyUrl.replace('http', 'ws')}/live`);
  await once(client, 'open');
  let wsClosed = false;
  client.on('close', () => {
    wsClosed = true;
  });

  const agent = new Agent({ connections: 16 });
  const stopAt = Date.now() + 10_000;
  const results = { ok: 0, failed: [] as string[] };
  const worker = async () => {
    while (Date.now() < stopAt) {
      try {
        const res = await request(`${dp.proxyUrl}/api/x`, { dispatcher: agent });
        const text = await res.body.text();
        if (res.statusCode === 200 && text === 'ok') results.ok++;
        else results.failed.push(`${res.statusCode} ${text.slice(0, 100)}`);
      } catch (err) {
        results.failed.push(String(err));
      }
    }
  };
  const pusher = async () => {
    let n = 1;
    const pushes = { applied: 0, other: [] as number[] };
    while (Date.now() < stopAt) {
      const res = await request(`${dp.adminUrl}/config`, {
        method: 'PUT',
        body: JSON.stringify(snap(n++)),
        headers: { 'content-type': 'application/json', authorization: 'Bearer test-admin-token' },
      });
      await res.body.dump();
      if (res.statusCode === 200) pushes.applied++;
      else pushes.other.push(res.statusCode);
      await new Promise((r) => setTimeout(r, 100));
    }
    return pushes;
  };
  const wsPinger = async () => {
    let echoed = 0;
    while (Date.now() < stopAt && !wsClosed) {
      client.send(`m${echoed}`);
      const [msg] = await once(client, 'message');
      if (String(msg) === `echo:m${echoed}`) echoed++;
      await new Promise((r) => setTimeout(r, 50));
    }
    return echoed;
  };
  const [pushes, echoed] = await Promise.all([
    pusher(),
    wsPinger(),
    ...Array.from({ length: 8 }, worker),
  ]).then((r) => [r[0], r[1]] as const);
  await agent.close();

  expect(results.failed).toEqual([]);
  expect(results.ok).toBeGreaterThan(500);
  expect(pushes.other).toEqual([]);
  expect(pushes.applied).toBeGreaterThanOrEqual(50);
  expect(wsClosed).toBe(false);
  expect(echoed).toBeGreaterThan(50);
  client.send('still there?');
  expect(String((await once(client, 'message'))[0])).toBe('echo:still there?');
  client.close();
}, 30_000);
