/**
 * Every preset's rendered manifests (and the defaults with every optional part switched on)
 * are accepted by the API server with strict field validation: `kubectl apply
 * --dry-run=server --validate=strict`, the chart's CRDs applied first (as helm does) and the
 * Prometheus Operator's ServiceMonitor and PodMonitor CRDs (fixtures/) for the presets
 * that turn them on. An unknown or mistyped field anywhere fails here. "operator values": every
 * value a platform team adds around the chart's own (extra env, volumes, ServiceAccounts,
 * scheduling, PodMonitors, extraObjects).
 */
import { randomBytes } from 'node:crypto';
import { basename, join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { kubectl, ok } from '../../helpers/kubectl.ts';
import { CHART, PRESETS, renderText } from '../helm.ts';

const NS = `sluice-chart-dry-${randomBytes(3).toString('hex')}`;

beforeAll(async () => {
  await ok(['apply', '--server-side', '--force-conflicts', '-f', join(CHART, 'crds')]);
  for (const crd of ['servicemonitor-crd.yaml', 'podmonitor-crd.yaml'])
    await ok([
      'apply',
      '--server-side',
      '--force-conflicts',
      '-f',
      join(import.meta.dirname, '../fixtures', crd),
    ]);
  await ok([
    'wait',
    '--for=condition=Established',
    '--timeout=30s',
    'crd/gatewayroutes.sluice.dev',
    'crd/servicemonitors.monitoring.coreos.com',
    'crd/podmonitors.monitoring.coreos.com',
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

const perComponent = {
  serviceAccount: { annotations: { 'eks.amazonaws.com/role-arn': 'arn:aws:iam::1:role/x' } },
  extraEnv: [
    { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: 'http://otel:4318' },
    { name: 'FROM_SECRET', valueFrom: { secretKeyRef: { name: 's', key: 'k', optional: true } } },
  ],
  envFrom: [{ configMapRef: { name: 'otel' } }, { prefix: 'X_', secretRef: { name: 'otel' } }],
  extraVolumes: [{ name: 'ca', configMap: { name: 'corp-ca' } }],
  extraVolumeMounts: [{ name: 'ca', mountPath: '/etc/ssl/corp', readOnly: true }],
  startupProbe: { periodSeconds: 3, failureThreshold: 20 },
  podLabels: { team: 'edge' },
  podAnnotations: { 'example.com/owner': 'edge' },
  topologySpreadConstraints: [
    { maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'DoNotSchedule' },
  ],
  priorityClassName: 'system-cluster-critical',
};
const operatorValues = {
  controller: perComponent,
  dataplane: perComponent,
  metrics: { podMonitor: { enabled: true, labels: { release: 'kps' } } },
  extraObjects: [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: '{{ .Release.Name }}-extra' },
      data: { a: 'b' },
    },
  ],
  tests: { path: '/healthz', host: 'api.example.com', expectStatus: 200 },
};

it.each<[string, string | null]>([
  ['defaults', null],
  ['everything on', 'everything'],
  ['operator values', 'operator'],
  ...PRESETS.map((p): [string, string] => [basename(p), p]),
])('%s: kubectl apply --dry-run=server --validate=strict accepts every manifest', async (_name, preset) => {
  const yaml = await renderText({
    namespace: NS,
    files: preset && preset !== 'everything' && preset !== 'operator' ? [preset] : [],
    set: preset === 'everything' ? everything : {},
    values: preset === 'operator' ? operatorValues : undefined,
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
