/**
 * The Publisher against real data planes (in this process, on loopback): push by hash, nothing
 * for pods in sync, refusals kept for status, and no lost push when a snapshot arrives while
 * a pod is being asked its hash (regression: it waited for the next resync).
 */
import { execSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Publisher } from '../../controller/publish/publisher.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { freePort, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, transformer, upstream } from '../helpers/tables.ts';

let up: Upstream;
const planes: DataPlane[] = [];
beforeAll(async () => {
  up = await startUpstream();
  for (let i = 0; i < 3; i++) planes.push(await startTestDataPlane());
});
afterAll(async () => {
  await Promise.all(planes.map((p) => p.close()));
  await up.close();
});

const v = (n: number) => snapshot([route(`r${n}`, 'u', `/v${n}`)], [upstream('u', up.url)]);
const pods = () => planes.map((p, i) => ({ key: p.adminUrl, name: `pod-${i}`, url: p.adminUrl }));
const until = async (cond: () => boolean, ms = 3_000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('Publisher', () => {
  it('pushes a snapshot published while the first GET /config is still in flight (no wait for resync)', async () => {
    const pushes: string[] = [];
    const p = new Publisher({
      token: 'test-admin-token',
      resyncMs: 3_600_000,
      onPush: (r) => pushes.push(r),
    });
    p.setPods(pods());
    p.setActive(true); // asks every pod its hash now
    p.publish(v(1)); // ...and this lands while those GETs run
    await until(() => planes.every((d) => d.holder.hash === v(1).hash) && pushes.length === 3);
    expect(pushes).toEqual(['applied', 'applied', 'applied']);
    p.stop();
  });

  it('pushes nothing to pods already on the hash; only changed snapshots travel', async () => {
    const pushes: string[] = [];
    const p = new Publisher({
      token: 'test-admin-token',
      resyncMs: 3_600_000,
      onPush: (r) => pushes.push(r),
    });
    p.setPods(pods());
    p.publish(v(1));
    p.setActive(true);
    await until(() => [...p.pods.values()].every((s) => s.hash === v(1).hash));
    expect(pushes).toEqual([]);
    p.publish(v(2));
    await until(() => planes.every((d) => d.holder.hash === v(2).hash) && pushes.length === 3);
    expect(pushes).toEqual(['applied', 'applied', 'applied']);
    // What each push sent: the snapshot's JSON (sluice_controller_snapshot_bytes).
    expect(p.desiredBytes).toBe(Buffer.byteLength(JSON.stringify(v(2))));
    p.stop();
  });

  it('a refused snapshot (422) is kept with its errors; the pod keeps its config', async () => {
    const changes: number[] = [];
    const p = new Publisher({
      token: 'test-admin-token',
      resyncMs: 3_600_000,
      onChange: () => changes.push(1),
    });
    p.setPods(pods());
    const bad = snapshot(
      [route('bad', 'u', '/bad', { plugins: [transformer('t', { add: { headers: ['Bad Name:x'] } })] })],
      [upstream('u', up.url)],
    );
    p.publish(bad);
    p.setActive(true);
    await until(() => [...p.pods.values()].every((s) => s.rejected?.hash === bad.hash));
    const state = [...p.pods.values()][0];
    expect(state.hash).toBe(v(2).hash);
    expect(state.rejected?.errors[0]).toMatchObject({ id: 'route/test/bad/bad/0' });
    expect(state.rejected?.errors[0].field).toContain('plugins[0].config.add.headers');
    expect(planes[0].holder.hash).toBe(v(2).hash);
    p.stop();
  });

  it('a snapshot over the body limit is not pushed: pods keep what they run, withheld says why, one log line', async () => {
    const logs: string[] = [];
    const pushes: string[] = [];
    const limit = Buffer.byteLength(JSON.stringify(v(4))); // v(4) fits; a table of two routes does not
    const p = new Publisher({
      token: 'test-admin-token',
      resyncMs: 3_600_000,
      maxBodyBytes: limit,
      onPush: (r) => pushes.push(r),
      log: (_level, msg) => logs.push(msg),
    });
    p.setPods(pods());
    p.publish(v(4));
    p.setActive(true);
    await until(() => planes.every((d) => d.holder.hash === v(4).hash) && pushes.length === 3);
    expect(p.withheld).toBeNull();
    const big = snapshot([route('r4', 'u', '/v4'), route('r5', 'u', '/v5')], [upstream('u', up.url)]);
    p.publish(big);
    expect(p.withheld).toMatch(/^the snapshot is 0\.0 MiB, over the 0\.0 MiB a data plane accepts$/);
    p.setActive(false);
    p.setActive(true); // asks every pod again: still nothing pushed
    await until(() => [...p.pods.values()].every((s) => !s.inFlight && s.hash === v(4).hash));
    await new Promise((r) => setTimeout(r, 100));
    expect(pushes).toEqual(['applied', 'applied', 'applied']);
    expect(planes.map((d) => d.holder.hash)).toEqual([v(4).hash, v(4).hash, v(4).hash]);
    expect(logs.filter((m) => m === 'snapshot not pushed: too large')).toHaveLength(1);
    // A snapshot that fits again is pushed (v(2): what the tests below expect the pods to run).
    p.publish(v(2));
    expect(p.withheld).toBeNull();
    await until(() => planes.every((d) => d.holder.hash === v(2).hash));
    p.stop();
  });

  it('the wrong token is an error, retried with backoff, never a silent success', async () => {
    const p = new Publisher({ token: 'wrong', resyncMs: 3_600_000, backoffMs: { base: 50, max: 100 } });
    p.setPods(pods().slice(0, 1));
    p.publish(v(3));
    p.setActive(true);
    await until(() => ([...p.pods.values()][0]?.failures ?? 0) >= 2);
    expect([...p.pods.values()][0].lastError).toContain('401');
    expect(planes[0].holder.hash).toBe(v(2).hash);
    p.stop();
  });
});

describe('Publisher, gzip', () => {
  it('pushes gzip; a pod that reads the gzip bytes as JSON (a data plane older than gzip, 400) gets plain JSON at once', async () => {
    // An older data plane: JSON.parse of the body whatever its Content-Encoding.
    const seen: { encoding: string | undefined; body: Buffer }[] = [];
    let runs = '';
    const old = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        if (req.method === 'GET') return res.end(JSON.stringify({ hash: runs }));
        const body = Buffer.concat(chunks);
        seen.push({ encoding: req.headers['content-encoding'], body });
        try {
          runs = (JSON.parse(body.toString('utf8')) as { hash: string }).hash;
          res.end(JSON.stringify({ result: 'applied', hash: runs }));
        } catch {
          res.statusCode = 400;
          res.end('{}');
        }
      });
    });
    await new Promise<void>((r) => old.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(old.address() as AddressInfo).port}`;
    const pushes: string[] = [];
    const p = new Publisher({ token: 't', resyncMs: 3_600_000, onPush: (r) => pushes.push(r) });
    p.setPods([{ key: url, name: 'old', url }]);
    p.publish(v(7));
    p.setActive(true);
    await until(() => runs === v(7).hash);
    expect(seen.map((s) => s.encoding)).toEqual(['gzip', undefined]);
    expect(JSON.parse(gunzipSync(seen[0].body).toString('utf8'))).toEqual(v(7));
    expect(pushes).toEqual(['applied']); // the 400 was no failure: no backoff, no error counted
    p.publish(v(8)); // …and it stays plain
    await until(() => runs === v(8).hash);
    expect(seen.map((s) => s.encoding)).toEqual(['gzip', undefined, undefined]);
    p.stop();
    old.close();
  });
});

describe('Publisher, idle and failing pods', () => {
  it('an absent option keeps its default: { resyncMs: undefined } still resyncs every 10 s, not every tick', async () => {
    let asks = 0;
    const { createServer } = await import('node:http');
    const pod = createServer((req, res) => {
      if (req.method === 'GET') asks++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ hash: v(1).hash }));
    }).listen(0, '127.0.0.1');
    await new Promise((r) => pod.once('listening', r));
    const url = `http://127.0.0.1:${(pod.address() as { port: number }).port}`;
    const p = new Publisher({ token: 't', resyncMs: undefined, timeoutMs: undefined });
    p.setPods([{ key: 'k', name: 'pod', url }]);
    p.publish(v(1));
    p.setActive(true);
    await new Promise((r) => setTimeout(r, 500));
    // The first ask only: the next resync is 10 s away (with the bug, ~500 asks by now).
    expect(asks).toBe(1);
    p.stop();
    await new Promise((r) => pod.close(r));
  });

  it('a pod refusing connections: every attempt counted as an error, backoff kept whatever is published, one log line', async () => {
    const port = await freePort();
    const results: string[] = [];
    const logs: string[] = [];
    const changes: number[] = [];
    const p = new Publisher({
      token: 'test-admin-token',
      resyncMs: 50, // resyncs must not cut the backoff short either
      backoffMs: { base: 40, max: 160 },
      random: () => 0.5,
      onPush: (r) => results.push(r),
      onChange: () => changes.push(1),
      log: (level, msg, extra) => logs.push(`${level} ${msg} ${JSON.stringify(extra)}`),
    });
    p.setPods([{ key: 'dead', name: '10.0.0.5', url: `http://127.0.0.1:${port}` }]);
    p.setActive(true);
    for (let i = 1; i <= 20; i++) {
      p.publish(v(100 + i)); // a new snapshot every 25 ms does not bypass the backoff
      await new Promise((r) => setTimeout(r, 25));
    }
    const pod = [...p.pods.values()][0];
    // Delays 30, 60, 120, 120, … ms (equal jitter at 0.5): about 6 attempts in 500 ms; without backoff, 20+.
    expect(pod.failures).toBeGreaterThanOrEqual(3);
    expect(pod.failures).toBeLessThanOrEqual(8);
    expect(results.length).toBe(pod.failures);
    expect(new Set(results)).toEqual(new Set(['error']));
    expect(pod.lastError).toBe('connection refused');
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatch(/^warn data-plane pod failing.*"err":"connection refused"/);
    expect(changes).toHaveLength(2); // the pod was found; it started failing (not once per attempt)
    p.stop();
  });

  it('a pod answering garbage or too slowly is a failing pod, never a crash or a pod "in sync"', async () => {
    const { createServer } = await import('node:http');
    const garbage = createServer((_req, res) => res.end('<html>not a data plane</html>')).listen(
      0,
      '127.0.0.1',
    );
    const slow = createServer(() => {}).listen(0, '127.0.0.1'); // never answers
    await Promise.all([garbage, slow].map((s) => new Promise((r) => s.once('listening', r))));
    const url = (s: typeof slow) => `http://127.0.0.1:${(s.address() as { port: number }).port}`;
    const p = new Publisher({
      token: 'test-admin-token',
      resyncMs: 3_600_000,
      timeoutMs: 200,
      backoffMs: { base: 50, max: 100 },
    });
    p.setPods([
      { key: 'g', name: 'garbage', url: url(garbage) },
      { key: 's', name: 'slow', url: url(slow) },
    ]);
    p.publish(v(11));
    p.setActive(true);
    await until(() => [...p.pods.values()].every((x) => x.failures >= 1), 3_000);
    const [g, s] = [p.pods.get('g')!, p.pods.get('s')!];
    expect([g.hash, g.lastError]).toEqual([null, 'GET /config answered no hash']);
    expect([s.hash, s.lastError]).toEqual([null, 'timed out']);
    p.stop();
    slow.closeAllConnections();
    await Promise.all([garbage, slow].map((x) => new Promise((r) => x.close(r))));
  });

  it('a pod that comes back is pushed to, logged once as answering again, and counted in sync', async () => {
    const port = await freePort();
    const logs: string[] = [];
    const p = new Publisher({
      token: 'test-admin-token',
      resyncMs: 3_600_000,
      backoffMs: { base: 20, max: 40 },
      log: (level, msg) => logs.push(`${level} ${msg}`),
    });
    p.setPods([{ key: 'back', name: 'back', url: `http://127.0.0.1:${port}` }]);
    p.publish(v(9));
    p.setActive(true);
    await until(() => ([...p.pods.values()][0]?.failures ?? 0) >= 2);
    const plane = await startTestDataPlane({ adminPort: port });
    try {
      await until(() => plane.holder.hash === v(9).hash);
      const pod = [...p.pods.values()][0];
      await until(() => pod.failures === 0);
      expect(pod).toMatchObject({ hash: v(9).hash, lastError: null, failingSince: null });
      expect(logs).toEqual([
        'warn data-plane pod failing: retrying with backoff',
        'info data-plane pod answers again',
      ]);
    } finally {
      p.stop();
      await plane.close();
    }
  });

  it('a pod failing for longer than failingWarnMs is marked failingLong, and onChange hears it', async () => {
    const port = await freePort();
    let now = 0;
    let changes = 0;
    const p = new Publisher({
      token: 'test-admin-token',
      resyncMs: 3_600_000,
      backoffMs: { base: 10, max: 10 },
      now: () => now,
      failingWarnMs: 60_000,
      onChange: () => changes++,
    });
    p.setPods([{ key: 'x', name: 'x', url: `http://127.0.0.1:${port}` }]);
    const pod = [...p.pods.values()][0];
    p.setActive(true);
    await until(() => pod.failures >= 2);
    expect(pod.failingLong).toBe(false);
    const before = changes;
    now = 60_000;
    await until(() => pod.failingLong);
    await until(() => changes === before + 1);
    p.stop();
  });
});

describe('Publisher over HTTPS', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-tls-'));
  let tlsPlane: DataPlane;
  beforeAll(async () => {
    // A CA, and an admin certificate issued for the Service name (pods are dialled by IP).
    const sh = (cmd: string) => execSync(cmd, { cwd: dir, stdio: 'pipe' });
    sh('openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=test-ca');
    sh('openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj /CN=sluice-admin');
    writeFileSync(join(dir, 'san.ext'), 'subjectAltName=DNS:sluice-admin.test.svc\n');
    sh(
      'openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out admin.crt -days 1 -extfile san.ext',
    );
    tlsPlane = await startTestDataPlane({
      adminTls: { certFile: join(dir, 'admin.crt'), keyFile: join(dir, 'admin.key') },
    });
  });
  afterAll(async () => {
    await tlsPlane.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('pushes to a pod whose certificate the CA signed for the server name', async () => {
    expect(tlsPlane.adminUrl).toMatch(/^https:/);
    const p = new Publisher({
      token: 'test-admin-token',
      resyncMs: 3_600_000,
      tls: { ca: readFileSync(join(dir, 'ca.crt'), 'utf8'), serverName: 'sluice-admin.test.svc' },
    });
    p.setPods([{ key: 'tls', name: 'tls', url: tlsPlane.adminUrl }]);
    p.publish(v(7));
    p.setActive(true);
    await until(() => tlsPlane.holder.hash === v(7).hash);
    p.stop();
  });

  it('refuses a pod whose certificate it cannot verify (no CA, or another name)', async () => {
    for (const tls of [
      undefined,
      { ca: readFileSync(join(dir, 'ca.crt'), 'utf8'), serverName: 'other.test.svc' },
    ]) {
      const p = new Publisher({
        token: 'test-admin-token',
        resyncMs: 3_600_000,
        backoffMs: { base: 50, max: 50 },
        tls,
      });
      p.setPods([{ key: 'tls', name: 'tls', url: tlsPlane.adminUrl }]);
      p.publish(v(8));
      p.setActive(true);
      await until(() => ([...p.pods.values()][0]?.failures ?? 0) >= 1);
      expect(tlsPlane.holder.hash).not.toBe(v(8).hash);
      p.stop();
    }
  });
});
