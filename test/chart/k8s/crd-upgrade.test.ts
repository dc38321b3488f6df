/**
 * Upgrading the CRDs, as docs/upgrading.md says: Helm installs crds/ on the first install and
 * never again, so after `helm upgrade` the cluster keeps the old schemas; `sluice crds | kubectl
 * apply --server-side --force-conflicts -f -` brings the new ones. Played with helm 3.6.2 itself:
 * a release installed from a copy of the chart whose CRDs lack a field (routes[].hosts, as an
 * older version would), upgraded to the real chart, then the command's pipe run in a shell.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { kubectl, ok } from '../../helpers/kubectl.ts';
import { CHART, helm, PRESETS, ROOT } from '../helm.ts';

const NS = `sluice-chart-crds-${randomBytes(3).toString('hex')}`;
const CRDS = ['crd/gatewayroutes.sluice.dev', 'crd/gatewayplugins.sluice.dev'];
const ROUTES_CRD = 'sluice.dev_gatewayroutes.yaml';
const route = `apiVersion: sluice.dev/v1alpha1
kind: GatewayRoute
metadata: { name: named }
spec:
  service: { name: named, url: "http://127.0.0.1:9" }
  routes: [{ name: main, paths: ["/named"], hosts: ["api.example.com"] }]
`;
const applyRoute = () => kubectl(['apply', '-n', NS, '--validate=strict', '-f', '-'], route);
const shell = (command: string) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile('sh', ['-c', command], { cwd: ROOT, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number(err.code) || 1 : 0, stdout, stderr }),
    ),
  );

/** The chart as an older version would ship it: its GatewayRoute CRD without routes[].hosts. */
function olderChart(): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'sluice-old-chart-')), 'sluice');
  cpSync(CHART, dir, { recursive: true });
  const file = join(dir, 'crds', ROUTES_CRD);
  const crd = parse(readFileSync(file, 'utf8'));
  const items = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.routes.items;
  expect(items.properties.hosts).toBeDefined();
  delete items.properties.hosts;
  writeFileSync(file, stringify(crd));
  return dir;
}

beforeAll(async () => {
  // A first install: Helm creates the CRDs only when they do not exist.
  await ok(['delete', '--ignore-not-found', '--wait', ...CRDS]);
}, 60_000);
afterAll(async () => {
  await helm(['uninstall', 'gw', '-n', NS]);
  await ok(['apply', '--server-side', '--force-conflicts', '-f', join(ROOT, 'crds')]);
});

it('helm upgrade leaves the old CRDs; sluice crds | kubectl apply --server-side --force-conflicts upgrades them', async () => {
  const install = await helm([
    'install',
    'gw',
    olderChart(),
    '-n',
    NS,
    '--create-namespace',
    '-f',
    PRESETS[1],
  ]);
  expect(install.code, install.stderr).toBe(0);
  await ok(['wait', '--for=condition=Established', '--timeout=30s', ...CRDS]);
  const old = await applyRoute();
  expect(old.code).not.toBe(0);
  expect(old.stderr).toMatch(/unknown field "spec\.routes\[0\]\.hosts"/);

  const upgrade = await helm(['upgrade', 'gw', CHART, '-n', NS, '-f', PRESETS[1]]);
  expect(upgrade.code, upgrade.stderr).toBe(0);
  expect((await applyRoute()).stderr).toMatch(/unknown field "spec\.routes\[0\]\.hosts"/);

  // Without --force-conflicts: the fields Helm wrote are its field manager's (Helm 3.6 sets
  // none, so Go's default user agent; later Helm versions "helm").
  const plain = await shell('node bin/sluice.ts crds | kubectl apply --server-side -f -');
  expect(plain.code).not.toBe(0);
  expect(plain.stderr).toMatch(/conflict with "(Go-http-client|helm)"/);

  const forced = await shell('node bin/sluice.ts crds | kubectl apply --server-side --force-conflicts -f -');
  expect(forced.code, forced.stderr).toBe(0);
  expect(forced.stdout).toContain(
    'customresourcedefinition.apiextensions.k8s.io/gatewayroutes.sluice.dev serverside-applied',
  );
  await ok(['wait', '--for=condition=Established', '--timeout=30s', ...CRDS]);
  const now = await applyRoute();
  expect(now.stderr).toBe('');
  expect(now.code).toBe(0);
  const hosts = await ok(['get', 'gwr', 'named', '-n', NS, '-o', 'jsonpath={.spec.routes[0].hosts[0]}']);
  expect(hosts).toBe('api.example.com');
}, 120_000);
