/**
 * The standalone preset's wiring: no controller, no RBAC; the data-plane Deployment runs
 * `sluice run` on the ConfigMap the chart makes of standalone.config. Rendered, applied, the
 * pod run locally as its Deployment says (local-pod.ts): it serves the route at once. The
 * `helm test` pod's command, run the same way against it, passes and fails as it should.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ok } from '../../helpers/kubectl.ts';
import { stopAllSluice } from '../../helpers/processes.ts';
import { freePort, startUpstream, type Upstream } from '../../helpers/servers.ts';
import { find, PRESETS, render, renderText, ROOT } from '../helm.ts';
import { startLocalPod } from './local-pod.ts';

const NS = `sluice-chart-alone-${randomBytes(3).toString('hex')}`;
let up: Upstream;

beforeAll(async () => {
  up = await startUpstream();
  await ok(['apply', '--server-side', '--force-conflicts', '-f', join(ROOT, 'charts/sluice/crds')]);
  await ok(['create', 'namespace', NS]);
});
afterAll(async () => {
  await stopAllSluice();
  await up?.close();
});

it('standalone: the data plane serves standalone.config from its ConfigMap, ready at once', async () => {
  const opts = {
    namespace: NS,
    files: [PRESETS[0]],
    values: {
      standalone: {
        config: `apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: alone }
spec:
  service: { name: alone, url: "${up.url}" }
  routes:
    - { name: main, paths: ["/alone"] }
    - { name: named, paths: ["/named"], hosts: ["api.example.com"] }
`,
      },
    },
  };
  const manifests = await render(opts);
  expect(manifests.filter((m) => m.kind === 'Deployment').map((m) => m.metadata.name)).toEqual([
    'gw-sluice-dataplane',
  ]);
  await ok(['apply', '-n', NS, '-f', '-'], await renderText(opts));
  const pod = await startLocalPod(
    find(manifests, 'Deployment', 'gw-sluice-dataplane'),
    NS,
    0,
    'readinessProbe',
  );
  expect(pod.args[0]).toBe('run');
  const r = await fetch(pod.url('http', '/alone/1'));
  expect(r.status).toBe(200);
  expect(((await r.json()) as { url: string }).url).toBe('/alone/1');

  // `helm test`: the hook pod's command (node -e …), its URL pointed at the local pod's proxy port.
  const test = find(manifests, 'Pod', 'gw-sluice-test-proxy').spec.containers[0];
  expect(test.command).toEqual(['node', '-e']);
  const env = Object.fromEntries(test.env.map((e: { name: string; value: string }) => [e.name, e.value]));
  expect(env.SLUICE_TEST_URL).toBe(`http://gw-sluice.${NS}.svc:80/`);
  const runTest = (over: Record<string, string>) =>
    new Promise<{ code: number; out: string }>((resolve) =>
      execFile(
        process.execPath,
        ['-e', ...test.args],
        { env: { ...env, ...over }, timeout: 20_000 },
        (err, stdout) => resolve({ code: err ? Number(err.code) : 0, out: stdout }),
      ),
    );
  const proxy = pod.url('http');
  expect(await runTest({ SLUICE_TEST_URL: `${proxy}/alone/1`, SLUICE_TEST_EXPECT: '200' })).toEqual({
    code: 0,
    out: `GET ${proxy}/alone/1: 200, pass\n`,
  });
  // The default: any answer below 500 (here the data plane's 404 for a path no route claims).
  expect(await runTest({ SLUICE_TEST_URL: `${proxy}/` })).toEqual({
    code: 0,
    out: `GET ${proxy}/: 404, pass\n`,
  });
  expect(await runTest({ SLUICE_TEST_URL: `${proxy}/`, SLUICE_TEST_EXPECT: '200' })).toEqual({
    code: 1,
    out: `GET ${proxy}/: 404, fail: expected 200\n`,
  });
  // tests.host: the Host header a host-bound route needs.
  expect(
    await runTest({
      SLUICE_TEST_URL: `${proxy}/named`,
      SLUICE_TEST_HOST: 'api.example.com',
      SLUICE_TEST_EXPECT: '200',
    }),
  ).toEqual({ code: 0, out: `GET ${proxy}/named (Host api.example.com): 200, pass\n` });
  expect((await runTest({ SLUICE_TEST_URL: `${proxy}/named`, SLUICE_TEST_EXPECT: '200' })).code).toBe(1);
  const closed = `http://127.0.0.1:${await freePort()}/`;
  const down = await runTest({ SLUICE_TEST_URL: closed });
  expect(down.code).toBe(1);
  expect(down.out).toMatch(/ECONNREFUSED/);
});
