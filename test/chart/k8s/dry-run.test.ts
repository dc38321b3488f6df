/**
 * Every preset's rendered manifests (and the defaults with every optional part switched on)
 * are accepted by the API server with strict field validation: `kubectl apply
 * --dry-run=server --validate=strict`, the chart's CRDs applied first (as helm does) and the
 * Prometheus Operator's ServiceMonitor CRD (fixtures/servicemonitor-crd.yaml) for the presets
 * that turn it on. An unknown or mistyped field anywhere fails here.
 */
import { randomBytes } from 'node:crypto';
import { basename, join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { kubectl, ok } from '../../helpers/kubectl.ts';
import { CHART, PRESETS, renderText } from '../helm.ts';

const NS = `sluice-chart-dry-${randomBytes(3).toString('hex')}`;

beforeAll(async () => {
  await ok(['apply', '--server-side', '--force-conflicts', '-f', join(CHART, 'crds')]);
  await ok([
    'apply',
    '--server-side',
    '--force-conflicts',
    '-f',
    join(import.meta.dirname, '../fixtures/servicemonitor-crd.yaml'),
  ]);
  await ok([
    'wait',
    '--for=condition=Established',
    '--timeout=30s',
    'crd/gatewayroutes.sluice.dev',
    'crd/servicemonitors.monitoring.coreos.com',
  ]);
  await ok(['create', 'namespace', NS]);
}, 60_000);

const everything = {
  'redis.bundled.enabled': 'true',
  'proxy.https.enabled': 'true',
  'proxy.https.defaultCertificateSecret': 'gw-cert',
  'dataplane.autoscaling.enabled': 'true',
  'metrics.serviceMonitor.enabled': 'true',
  'dataplane.trustedProxies[0]': '10.0.0.0/8',
};

it.each<[string, string | null]>([
  ['defaults', null],
  ['everything on', 'everything'],
  ...PRESETS.map((p): [string, string] => [basename(p), p]),
])('%s: kubectl apply --dry-run=server --validate=strict accepts every manifest', async (_name, preset) => {
  const yaml = await renderText({
    namespace: NS,
    files: preset && preset !== 'everything' ? [preset] : [],
    set: preset === 'everything' ? everything : {},
  });
  const r = await kubectl(['apply', '--dry-run=server', '--validate=strict', '-n', NS, '-f', '-'], yaml);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  const applied = r.stdout.trim().split('\n');
  expect(applied.length).toBe(yaml.split(/^kind: /m).length - 1);
  expect(applied.every((l) => /\(server dry run\)$/.test(l))).toBe(true);
});

it('a mistyped field is refused by the server (the check can fail)', async () => {
  const yaml = (await renderText({ namespace: NS })).replace(
    'terminationGracePeriodSeconds:',
    'terminationGracePeriodSecond:',
  );
  const r = await kubectl(['apply', '--dry-run=server', '--validate=strict', '-n', NS, '-f', '-'], yaml);
  expect(r.code).not.toBe(0);
  expect(r.stderr).toMatch(/unknown field "spec.template.spec.terminationGracePeriodSecond"/);
});
