/**
 * Gateway listener ports under `sluice run --workers 2` (the real binary): each worker opens the
 * snapshot's listener ports through node:cluster as it opens the proxy port (the primary binds,
 * connections are dealt to both), GET /config on the primary says a port is bound only when
 * every worker has it, a port the snapshot drops is closed on all of them, and a port another
 * process holds is reported unbound and binds once freed. Which worker answered comes from the
 * access log (each line carries its pid); every request opens a fresh connection.
 */
import { once } from 'node:events';
import { request } from 'node:http';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Snapshot } from '../../dataplane/config/route-table.ts';
import { listenersOf, untilPort } from '../helpers/listeners.ts';
import { fetchMetrics, type LaunchedProcess, launch, metricValue } from '../helpers/processes.ts';
import { freePort, startUpstream, type Upstream } from '../helpers/servers.ts';
import { listener, route, snapshot, upstream } from '../helpers/tables.ts';

let up: Upstream;
let gw: LaunchedProcess;
let adminUrl: string;

beforeAll(async () => {
  up = await startUpstream();
  const dir = await mkdtemp(join(tmpdir(), 'sluice-listeners-workers-'));
  const file = join(dir, 'gateway.yaml');
  await writeFile(
    file,
    `apiVersion: sluice.dev/v1alpha1\nkind: GatewayRoute\nmetadata: { name: own, namespace: default }\nspec:\n  service: { name: own, url: "${up.url}" }\n  routes:\n    - name: r\n      paths: ["/own"]\n`,
  );
  const [port, adminPort] = [await freePort(), await freePort()];
  adminUrl = `http://127.0.0.1:${adminPort}`;
  gw = await launch(
    [
      'run',
      '-f',
      file,
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--admin-port',
      String(adminPort),
      '--admin-token',
      't',
      '--drain-timeout-ms',
      '2000',
      '--workers',
      '2',
    ],
    `${adminUrl}/readyz`,
    dir,
    { what: 'sluice run --workers 2', readyTimeoutMs: 30_000 },
  );
}, 40_000);

afterAll(async () => {
  await gw?.stop();
  await up?.close();
});

/** A catch-all listener per port with a route on /gw. */
const withPorts = (ports: number[]): Snapshot =>
  snapshot(
    ports.map((p) => route(`gw${p}`, 'u', '/gw', { listeners: [`listener/test/gw/l${p}`] })),
    [upstream('u', up.url)],
    { listeners: ports.map((p) => listener(`l${p}`, p)) },
  );

const put = async (s: Snapshot) =>
  (await (
    await fetch(`${adminUrl}/config`, {
      method: 'PUT',
      headers: { authorization: 'Bearer t', 'content-type': 'application/json' },
      body: JSON.stringify(s),
    })
  ).json()) as { result: string };

/** GET on a fresh connection: the status, or the error code. */
function get(port: number, path: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    req.end();
  });
}

/** The pids whose access log lines answered `path` on `port`. */
function answeredBy(path: string, from: number): Set<number> {
  const pids = new Set<number>();
  for (const line of gw.stdout().slice(from).split('\n')) {
    if (!line.includes('"msg":"request"')) continue;
    const l = JSON.parse(line) as { pid: number; path?: string; status: number };
    if (l.path === path && l.status === 200) pids.add(l.pid);
  }
  return pids;
}

describe('listener ports with --workers 2', () => {
  it('serves a listener port from both workers and reports it bound', async () => {
    const port = await freePort();
    expect((await put(withPorts([port]))).result).toBe('applied');
    await untilPort({ adminUrl }, port, true, 10_000);
    const from = gw.stdout().length;
    const statuses = [];
    for (let i = 0; i < 20; i++) statuses.push(await get(port, '/gw'));
    expect(statuses).toEqual(Array(20).fill(200));
    await expect.poll(() => answeredBy('/gw', from).size).toBe(2);
    expect(
      metricValue(await fetchMetrics(adminUrl), 'sluice_listener_port_bound', { port: String(port) }),
    ).toBe(1);

    expect((await put(withPorts([]))).result).toBe('applied');
    await expect.poll(() => get(port, '/gw'), { timeout: 5_000 }).toBe('ECONNREFUSED');
    expect(await listenersOf(adminUrl)).toEqual([]);
  });

  it('reports a port another process holds as unbound, then binds it once freed', async () => {
    const port = await freePort();
    const blocker = createServer().listen(port, '127.0.0.1');
    await once(blocker, 'listening');
    try {
      expect((await put(withPorts([port]))).result).toBe('applied');
      await untilPort({ adminUrl }, port, false, 10_000);
      expect((await listenersOf(adminUrl))[0].error).toMatch(/^EADDRINUSE/);
      const text = await fetchMetrics(adminUrl);
      expect(text).toMatch(new RegExp(`sluice_listener_port_bound\\{port="${port}"\\} 0`));
      expect(
        metricValue(text, 'sluice_listener_bind_failures_total', { port: String(port) }),
      ).toBeGreaterThan(0);
    } finally {
      await new Promise((r) => blocker.close(r));
    }
    await untilPort({ adminUrl }, port, true, 15_000);
    expect(await get(port, '/gw')).toBe(200);
  });
});
