/**
 * `--workers N` through the real binary: a cluster primary and N worker processes on one proxy
 * port. Which worker answered comes from the access log (each worker's lines carry its pid);
 * every request opens a fresh connection, since the primary hands out connections round-robin.
 * Covered: both workers serve, PUT /config reaches every worker, /metrics sums them, /readyz,
 * GET /debug/config,
 * a SIGKILLed worker is replaced and serves the current snapshot, SIGTERM exits 0 with every
 * worker gone; --workers 1 is one process; idempotency without --redis is refused.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../dataplane/standalone.ts';
import { type LaunchedProcess, launch, metricValue } from '../helpers/processes.ts';
import { freePort, startUpstream, type Upstream } from '../helpers/servers.ts';

const SLUICE = ['--disable-warning=ExperimentalWarning', 'bin/sluice.ts'];
let dir: string;
let up: Upstream;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-workers-'));
  up = await startUpstream();
});
afterAll(async () => {
  await up?.close();
  await rm(dir, { recursive: true, force: true });
});

const route = (name: string, path: string) =>
  `apiVersion: sluice.dev/v1alpha1\nkind: GatewayRoute\nmetadata: { name: ${name}, namespace: default }\nspec:\n  service: { name: ${name}, url: "${up.url}" }\n  routes:\n    - name: r\n      paths: ["${path}"]\n`;

interface Gateway extends LaunchedProcess {
  proxy: string;
  admin: string;
}

async function run(yaml: string, workers: string): Promise<Gateway> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const state = await mkdtemp(join(tmpdir(), 'sluice-workers-state-'));
  const file = join(state, 'gateway.yaml');
  await writeFile(file, yaml);
  const proc = await launch(
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
      '--state-dir',
      join(state, 'state'),
      '--admin-token',
      't',
      '--drain-timeout-ms',
      '2000',
      '--workers',
      workers,
    ],
    `http://127.0.0.1:${adminPort}/readyz`,
    state,
    { what: 'sluice run --workers', readyTimeoutMs: 30_000 },
  );
  return Object.assign(proc, { proxy: `http://127.0.0.1:${port}`, admin: `http://127.0.0.1:${adminPort}` });
}

/** GET on a fresh connection (no keep-alive agent): the status. */
function get(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Sends `n` GETs one after the other, each on its own connection; their statuses. */
async function gets(url: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await get(url));
  return out;
}

/** pid → requests answered, from the access log lines of `path` written since `from` (a stdout offset). */
function answeredBy(gw: LaunchedProcess, path: string, from = 0): Map<number, number[]> {
  const by = new Map<number, number[]>();
  for (const line of gw.stdout().slice(from).split('\n')) {
    if (!line.includes('"msg":"request"')) continue;
    // Unmatched requests log the target, matched ones the path.
    const l = JSON.parse(line) as { pid: number; path?: string; target?: string; status: number };
    if ((l.path ?? l.target) === path) by.set(l.pid, [...(by.get(l.pid) ?? []), l.status]);
  }
  return by;
}

interface ConfigView {
  hash: string;
  workers?: { pid: number; hash: string; serving: boolean }[];
}
const config = async (gw: Gateway) => (await (await fetch(`${gw.admin}/config`)).json()) as ConfigView;

/** Child pids of a process (Linux /proc). */
const children = (pid: number) =>
  readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);

describe('sluice run --workers 2', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await run(route('a', '/a'), '2');
  }, 40_000);
  afterAll(() => gw?.stop());

  it('runs two worker processes, each serving requests, and /metrics sums them', async () => {
    const view = await config(gw);
    expect(view.workers).toHaveLength(2);
    const pids = view.workers!.map((w) => w.pid);
    expect(children(gw.process.pid!).sort()).toEqual([...pids].sort());
    expect(view.workers!.every((w) => w.serving && w.hash === view.hash && w.hash !== '')).toBe(true);
    expect(await (await fetch(`${gw.admin}/readyz`)).json()).toMatchObject({
      status: 'ready',
      hash: view.hash,
    });

    expect(await gets(`${gw.proxy}/a`, 20)).toEqual(Array(20).fill(200));
    await expect.poll(() => [...answeredBy(gw, '/a').values()].flat().length).toBe(20);
    const by = answeredBy(gw, '/a');
    expect([...by.keys()].sort()).toEqual([...pids].sort());

    const text = await (await fetch(`${gw.admin}/metrics`)).text();
    expect(metricValue(text, 'sluice_requests_total', { route: 'route/default/a/r/0' })).toBe(20);
    expect(metricValue(text, 'sluice_request_duration_seconds_count', { route: 'route/default/a/r/0' })).toBe(
      20,
    );
    expect(metricValue(text, 'sluice_config_info', { hash: view.hash })).toBe(1);

    // GET /debug/config on the primary: the snapshot its workers run, behind the token.
    expect((await fetch(`${gw.admin}/debug/config`)).status).toBe(401);
    const debug = await fetch(`${gw.admin}/debug/config`, { headers: { authorization: 'Bearer t' } });
    expect(debug.status).toBe(200);
    const body = (await debug.json()) as { hash: string; table: { routes: { id: string }[] } };
    expect(body.hash).toBe(view.hash);
    expect(body.table.routes.map((r) => r.id)).toEqual(['route/default/a/r/0']);
  });

  it('PUT /config changes routing on every worker, and answers once they all run it', async () => {
    const { snapshot } = await loadConfig([await writeYaml('b.yaml', route('b', '/b'))]);
    const from = gw.stdout().length;
    const put = await fetch(`${gw.admin}/config`, {
      method: 'PUT',
      headers: { authorization: 'Bearer t', 'content-type': 'application/json' },
      body: JSON.stringify(snapshot),
    });
    expect(await put.json()).toEqual({ result: 'applied', hash: snapshot.hash });
    const view = await config(gw);
    expect(view.hash).toBe(snapshot.hash);
    expect(view.workers!.map((w) => w.hash)).toEqual([snapshot.hash, snapshot.hash]);

    expect(await gets(`${gw.proxy}/b`, 10)).toEqual(Array(10).fill(200));
    expect(await gets(`${gw.proxy}/a`, 10)).toEqual(Array(10).fill(404));
    await expect.poll(() => [...answeredBy(gw, '/a', from).values()].flat().length).toBe(10);
    expect(answeredBy(gw, '/b', from).size).toBe(2);
    expect(answeredBy(gw, '/a', from).size).toBe(2);

    const again = await fetch(`${gw.admin}/config`, {
      method: 'PUT',
      headers: { authorization: 'Bearer t', 'content-type': 'application/json' },
      body: JSON.stringify(snapshot),
    });
    expect(await again.json()).toEqual({ result: 'unchanged', hash: snapshot.hash });
    const bad = await fetch(`${gw.admin}/config`, {
      method: 'PUT',
      headers: { authorization: 'Bearer t', 'content-type': 'application/json' },
      body: JSON.stringify({ hash: 'x', table: { version: 1, routes: 'no', upstreams: [] } }),
    });
    expect(bad.status).toBe(422);
    expect((await config(gw)).hash).toBe(snapshot.hash);
  });

  it('replaces a SIGKILLed worker, which serves the current snapshot', async () => {
    const before = await config(gw);
    const victim = before.workers![0].pid;
    const survivor = before.workers![1].pid;
    process.kill(victim, 'SIGKILL');
    await expect
      .poll(
        async () => {
          const v = await config(gw);
          return v.workers!.filter((w) => w.serving && w.hash === before.hash && w.pid !== victim).length;
        },
        { timeout: 20_000 },
      )
      .toBe(2);
    expect(await (await fetch(`${gw.admin}/readyz`)).json()).toMatchObject({ status: 'ready' });
    const fresh = (await config(gw)).workers!.map((w) => w.pid).find((p) => p !== survivor)!;
    const from = gw.stdout().length;
    expect(await gets(`${gw.proxy}/b`, 10)).toEqual(Array(10).fill(200));
    expect(await gets(`${gw.proxy}/a`, 10)).toEqual(Array(10).fill(404));
    await expect.poll(() => [...answeredBy(gw, '/a', from).values()].flat().length).toBe(10);
    expect(answeredBy(gw, '/b', from).get(fresh)?.length).toBeGreaterThan(0);
    expect(answeredBy(gw, '/a', from).get(fresh)?.length).toBeGreaterThan(0);
  });

  it('SIGTERM drains every worker and exits 0', async () => {
    const pids = (await config(gw)).workers!.map((w) => w.pid);
    gw.process.kill('SIGTERM');
    expect(await gw.exited).toEqual({ code: 0, signal: null });
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow();
  });
});

describe('sluice run --workers 2 with proxy-cache', () => {
  it('DELETE /cache on the primary purges the memory cache of every worker', async () => {
    const cacheable = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' });
      res.end('{"ok":true}');
      return true;
    });
    const plugin =
      'apiVersion: sluice.dev/v1alpha1\nkind: GatewayPlugin\nmetadata: { name: cache, namespace: default }\n' +
      'spec: { plugin: proxy-cache, config: {} }\n---\n';
    const yaml =
      plugin +
      route('c', '/c')
        .replace(up.url, cacheable.url)
        .replace('paths: ["/c"]', 'paths: ["/c"]\n      plugins: [{ name: cache }]');
    const gw = await run(yaml, '2');
    try {
      // Fresh connections go round-robin: each worker misses once, stores, then hits.
      expect(await gets(`${gw.proxy}/c`, 10)).toEqual(Array(10).fill(200));
      await expect.poll(() => answeredBy(gw, '/c').size).toBe(2);
      expect(cacheable.seen).toHaveLength(2);

      const purge = await fetch(`${gw.admin}/cache?prefix=/c`, {
        method: 'DELETE',
        headers: { authorization: 'Bearer t' },
      });
      expect(purge.status).toBe(200);
      expect(await purge.json()).toEqual({ purged: 2, prefix: '/c' });

      expect(await gets(`${gw.proxy}/c`, 10)).toEqual(Array(10).fill(200));
      expect(cacheable.seen).toHaveLength(4);
    } finally {
      await gw.stop();
      await cacheable.close();
    }
  }, 60_000);
});

describe('sluice run --workers 2 on SIGTERM', () => {
  it('finishes the requests in flight on every worker before exiting 0', async () => {
    const slow = await startUpstream((_req, res) => {
      setTimeout(() => res.end('slow'), 700);
      return true;
    });
    try {
      const gw = await run(route('slow', '/slow').replace(up.url, slow.url), '2');
      // Four requests on four connections: round-robin puts two on each worker.
      const inFlight = Array.from({ length: 4 }, () => get(`${gw.proxy}/slow`));
      await expect.poll(() => slow.seen.length).toBe(4);
      gw.process.kill('SIGTERM');
      expect(await Promise.all(inFlight)).toEqual([200, 200, 200, 200]);
      expect(await gw.exited).toEqual({ code: 0, signal: null });
      expect(answeredBy(gw, '/slow').size).toBe(2);
    } finally {
      await slow.close();
    }
  });
});

describe('--workers 1 and refusals', () => {
  it('--workers 1 is one process: no cluster, no workers', async () => {
    const gw = await run(route('a', '/a'), '1');
    try {
      expect(children(gw.process.pid!)).toEqual([]);
      expect(await config(gw)).toEqual({ hash: expect.any(String) });
      expect(await get(`${gw.proxy}/a`)).toBe(200);
    } finally {
      await gw.stop();
    }
  });

  it('refuses idempotency routes with --workers > 1 and no --redis (exit 1, naming the route)', async () => {
    const r = await sluice(['run', '-f', 'examples/gateway.yaml', '--workers', '2', '--port', '0']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('route/default/charges/charges/0');
    expect(r.stderr).toContain('--redis');
  });

  it('refuses a --workers that is not a number or auto (exit 2)', async () => {
    const r = await sluice(['run', '-f', 'examples/gateway.yaml', '--workers', 'many']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--workers');
  });
});

async function writeYaml(name: string, yaml: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, yaml);
  return file;
}

function sluice(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...SLUICE, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.on('error', reject);
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}
