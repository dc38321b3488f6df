/**
 * The CLI as a user runs it: `sluice run` in a child process on the demo YAML, driven with curl;
 * bad files, SIGHUP reloads and SIGTERM draining.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SoapService, startSoapService } from '../../examples/soap-service.ts';
import { startGrpcUpstream } from '../../examples/grpc-upstream.ts';
import { startSampleUpstreams, type SampleUpstreams } from '../../examples/upstreams.ts';
import { freePort, startUpstream } from '../helpers/servers.ts';

const exec = promisify(execFile);
const SLUICE = ['--disable-warning=ExperimentalWarning', 'bin/sluice.ts'];

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-cli-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function runCli(args: string[]) {
  return exec(process.execPath, [...SLUICE, ...args]).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({
      code: e.code,
      stdout: e.stdout,
      stderr: e.stderr,
    }),
  );
}

interface Running {
  proc: ChildProcess;
  proxy: string;
  admin: string;
  stderr: () => string;
}

async function start(file: string, extra: string[] = []): Promise<Running> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const proc = spawn(
    process.execPath,
    [
      ...SLUICE,
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
      join(dir, `state-${port}`),
      '--admin-token',
      't',
      ...extra,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let err = '';
  proc.stderr?.on('data', (d) => {
    err += d;
  });
  proc.stdout?.resume();
  const admin = `http://127.0.0.1:${adminPort}`;
  for (let i = 0; i < 100; i++) {
    if (proc.exitCode !== null) throw new Error(`sluice exited ${proc.exitCode}: ${err}`);
    if (
      await fetch(`${admin}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { proc, proxy: `http://127.0.0.1:${port}`, admin, stderr: () => err };
}

const curl = async (...args: string[]) => (await exec('curl', ['-s', '--max-time', '10', ...args])).stdout;

describe('sluice run on the demo configuration', () => {
  let ups: SampleUpstreams;
  let soap: SoapService;
  let grpcUp: Awaited<ReturnType<typeof startGrpcUpstream>>;
  let gw: Running;
  beforeAll(async () => {
    ups = await startSampleUpstreams(3001);
    soap = await startSoapService(3005);
    grpcUp = await startGrpcUpstream(3006);
    gw = await start('examples/gateway.yaml');
  });
  afterAll(async () => {
    gw?.proc.kill('SIGTERM');
    await ups?.close();
    await soap?.close();
    await grpcUp?.close();
  });

  it('serves the README curl lines', async () => {
    const created = await curl(
      '-i',
      '-X',
      'POST',
      `${gw.proxy}/charges`,
      '-H',
      'content-type: application/json',
      '-d',
      '{"amount":100,"currency":"EUR"}',
    );
    expect(created).toMatch(/^HTTP\/1\.1 201/);
    expect(created).toMatch(/x-seen-gateway-version: v1/i);
    const id = /"id":"(ch_\d+)"/.exec(created)?.[1];
    expect(id).toBeTruthy();
    expect(JSON.parse(await curl(`${gw.proxy}/charges/${id}`))).toMatchObject({
      id,
      amount: 100,
      currency: 'EUR',
    });
    expect(JSON.parse(await curl(`${gw.proxy}/users/42`))).toMatchObject({ id: '42' });
    expect(JSON.parse(await curl(`${gw.proxy}/orders/42`))[0]).toMatchObject({ userId: '42' });
    expect(JSON.parse(await curl(`${gw.proxy}/preferences/42`))).toMatchObject({ userId: '42' });
    expect(JSON.parse(await curl(`${gw.proxy}/api/user-profile/42`))).toEqual({
      user: { id: '42', name: 'User 42', email: 'user42@example.com' },
      orders: [{ id: 'o-42-1', userId: '42', total: 4200, currency: 'EUR' }],
      preferences: { userId: '42', language: 'en', newsletter: false },
    });
    // REST to SOAP: the demo's CreateOrder, the note's markup carried as text.
    const order = await curl(
      '-X',
      'POST',
      `${gw.proxy}/api/orders`,
      '-H',
      'content-type: application/json',
      '-d',
      '{"customer":"alice","item":{"sku":"A-1","qty":2},"note":"<b>gift</b>"}',
    );
    expect(JSON.parse(order)).toEqual({
      CreateOrderResponse: {
        orderId: expect.stringMatching(/^o-\d+$/),
        customer: 'alice',
        note: '<b>gift</b>',
        line: { sku: 'A-1', qty: '2' },
      },
    });
    expect(JSON.parse(await curl(`${gw.proxy}/v1/items/42`))).toEqual({
      itemId: '42',
      displayName: 'Item 42',
      price: { currencyCode: 'EUR', units: '1299' },
      tags: ['sample'],
      stockCount: '9007199254740993',
    });
    expect(JSON.parse(await curl(`${gw.proxy}/v1/items/missing`))).toMatchObject({
      status: 404,
      grpcStatus: 'NOT_FOUND',
    });
    const made = JSON.parse(
      await curl(
        '-X',
        'POST',
        `${gw.proxy}/v1/shelves/top/items`,
        '-H',
        'content-type: application/json',
        '-d',
        '{"displayName":"Mug"}',
      ),
    );
    expect(made).toMatchObject({ displayName: 'Mug', itemId: expect.stringMatching(/^top-/) });
    expect(await curl('-o', '/dev/null', '-w', '%{http_code}', `${gw.proxy}/nowhere`)).toBe('404');
    expect(
      await curl(
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        '--path-as-is',
        `${gw.proxy}/charges/%2e%2e%2fadmin`,
      ),
    ).toBe('400');
    expect(JSON.parse(await curl(`${gw.admin}/config`)).hash).toMatch(/^[0-9a-f]{64}$/);
    expect(await curl(`${gw.admin}/metrics`)).toContain(
      'sluice_requests_total{route="route/default/charges/charges/0"',
    );
  });

  it('serves the demo idempotency lines: the retry is replayed, another body under the key is 422', async () => {
    const key = randomUUID();
    const post = (body: string) =>
      curl(
        '-i',
        '-X',
        'POST',
        `${gw.proxy}/charges`,
        '-H',
        'Authorization: Bearer demo-client',
        '-H',
        `Idempotency-Key: ${key}`,
        '-H',
        'content-type: application/json',
        '-d',
        body,
      );
    const first = await post('{"amount":250,"currency":"EUR"}');
    const again = await post('{"amount":250,"currency":"EUR"}');
    expect(first).toMatch(/^HTTP\/1\.1 201/);
    expect(first).not.toMatch(/idempotent-replayed/i);
    expect(again).toMatch(/^HTTP\/1\.1 201/);
    expect(again).toMatch(/idempotent-replayed: true/i);
    const body = (r: string) => r.slice(r.indexOf('\r\n\r\n') + 4);
    expect(body(again)).toBe(body(first));
    expect(await post('{"amount":999,"currency":"EUR"}')).toMatch(/^HTTP\/1\.1 422/);
  });

  it('logs one JSON access line per request, with the request id and no credentials', async () => {
    const out: string[] = [];
    gw.proc.stdout?.on('data', (d) => out.push(String(d)));
    await curl(
      `${gw.proxy}/users/7`,
      '-H',
      'x-request-id: trace-me-1',
      '-H',
      'authorization: Bearer secret-token-xyz',
    );
    await new Promise((r) => setTimeout(r, 300));
    const line = out
      .join('')
      .split('\n')
      .find((l) => l.includes('trace-me-1'));
    expect(line).toBeTruthy();
    expect(JSON.parse(line as string)).toMatchObject({
      requestId: 'trace-me-1',
      route: 'route/default/users/users/0',
      status: 200,
    });
    expect(out.join('')).not.toContain('secret-token-xyz');
  });
});

describe('bad configuration', () => {
  it('exits non-zero naming the file, the object and the field', async () => {
    const file = join(dir, 'bad.yaml');
    await writeFile(
      file,
      `apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: broken, namespace: default }
spec:
  service: { name: broken, url: "ftp://nope" }
  routes:
    - name: r
      paths: ["/x"]
      plugins: [{ name: missing-plugin }]
`,
    );
    const r = await runCli(['run', '-f', file, '--port', '0', '--admin-port', '0']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(file);
    expect(r.stderr).toContain('GatewayRoute default/broken');
    expect(r.stderr).toContain('spec.service.url');
    expect(r.stderr).toContain('spec.routes[0].plugins[0]');
  });

  it('names the file and line of a YAML syntax error', async () => {
    const file = join(dir, 'syntax.yaml');
    await writeFile(file, 'apiVersion: sluice.dev/v1alpha1\nkind: GatewayRoute\nmetadata: {name: a\n');
    const r = await runCli(['validate', '-f', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(file);
    expect(r.stderr).toMatch(/line \d+/);
  });

  it('validate prints the hash of a good file', async () => {
    const r = await runCli(['validate', '-f', 'examples/gateway.yaml']);
    expect(r.code).toBe(0);

    expect(r.stdout).toMatch(/^ok: 8 routes, hash [0-9a-f]{64}/);
  });
});

describe('signals', () => {
  it('SIGHUP re-reads the files; an invalid edit is refused and the running config stays', async () => {
    const up = await startUpstream();
    const file = join(dir, 'reload.yaml');
    const doc = (path: string, url = up.url) =>
      `apiVersion: sluice.dev/v1alpha1\nkind: GatewayRoute\nmetadata: { name: r, namespace: default }\nspec:\n  service: { name: s, url: "${url}" }\n  routes:\n    - name: r\n      paths: ["${path}"]\n`;
    await writeFile(file, doc('/one'));
    const gw = await start(file);
    try {
      expect((await fetch(`${gw.proxy}/one`)).status).toBe(200);
      await writeFile(file, doc('/two'));
      gw.proc.kill('SIGHUP');
      await expect.poll(async () => (await fetch(`${gw.proxy}/two`)).status, { timeout: 5_000 }).toBe(200);
      expect((await fetch(`${gw.proxy}/one`)).status).toBe(404);
      await writeFile(file, doc('/three', 'not a url'));
      gw.proc.kill('SIGHUP');
      await new Promise((r) => setTimeout(r, 700));
      expect((await fetch(`${gw.proxy}/two`)).status).toBe(200);
      expect((await fetch(`${gw.proxy}/three`)).status).toBe(404);
    } finally {
      gw.proc.kill('SIGKILL');
      await up.close();
    }
  });

  it('SIGTERM finishes in-flight requests, then exits 0', async () => {
    const slow = await startUpstream((_req, res) => {
      setTimeout(() => res.end('finished'), 700);
      return true;
    });
    const file = join(dir, 'slow.yaml');
    await writeFile(
      file,
      `apiVersion: sluice.dev/v1alpha1\nkind: GatewayRoute\nmetadata: { name: slow, namespace: default }\nspec:\n  service: { name: slow, url: "${slow.url}" }\n  routes:\n    - name: slow\n      paths: ["/slow"]\n`,
    );
    const gw = await start(file, ['--drain-timeout-ms', '5000']);
    try {
      const inflight = fetch(`${gw.proxy}/slow`).then(async (r) => [r.status, await r.text()]);
      await new Promise((r) => setTimeout(r, 200));
      gw.proc.kill('SIGTERM');
      const [code] = await once(gw.proc, 'exit');
      expect(await inflight).toEqual([200, 'finished']);
      expect(code).toBe(0);
      await expect(fetch(`${gw.proxy}/slow`)).rejects.toThrow();
    } finally {
      gw.proc.kill('SIGKILL');
      await slow.close();
    }
  });
});

describe('help', () => {
  it('documents every command', async () => {
    const r = await runCli(['--help']);
    expect(r.code).toBe(0);
    for (const word of [
      'run -f FILE',
      'validate',
      'dataplane',
      'controller',
      '--admin-token',
      '--state-dir',
      '--log-level',
    ])
      expect(r.stdout).toContain(word);
  });
});
