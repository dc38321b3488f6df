/**
 * Every port the chart marks for scraping (the pods' prometheus.io/* annotations, the
 * ServiceMonitors through their Services, the PodMonitors) is reachable through the chart's
 * NetworkPolicies from a Prometheus in another namespace (networkPolicy.metricsNamespace,
 * `monitoring` by default), with each preset's values; the admin port stays closed to
 * everyone else. The policies are evaluated as the API defines them (network-policy.ts).
 */
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { find, type Manifest, PRESETS, type RenderOptions, render } from './helm.ts';
import { admits, type Source, type Target } from './network-policy.ts';

const prometheus = (
  namespace: string,
  podLabels: Record<string, string> = { 'app.kubernetes.io/name': 'prometheus' },
): Source => ({
  namespace,
  namespaceLabels: { 'kubernetes.io/metadata.name': namespace },
  podLabels,
});

interface Pod {
  owner: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  ports: { name?: string; containerPort: number }[];
}
const pods = (ms: Manifest[]): Pod[] =>
  ms
    .filter((m) => m.kind === 'Deployment' || m.kind === 'StatefulSet')
    .map((m) => ({
      owner: `${m.kind}/${m.metadata.name}`,
      labels: m.spec.template.metadata.labels ?? {},
      annotations: m.spec.template.metadata.annotations ?? {},
      ports: m.spec.template.spec.containers.flatMap((c: { ports?: Pod['ports'] }) => c.ports ?? []),
    }));
const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);
const portOf = (pod: Pod, port: string | number, what: string) => {
  const p = pod.ports.find((x) => (typeof port === 'number' ? x.containerPort === port : x.name === port));
  if (!p) throw new Error(`${what}: ${pod.owner} has no container port ${port}`);
  return p;
};

/** Every (pod, port) some part of the chart marks for scraping, with what marks it. */
function scraped(ms: Manifest[], namespace: string): (Target & { what: string })[] {
  const all = pods(ms);
  const target = (pod: Pod, port: string | number, what: string) => ({
    what: `${what} → ${pod.owner}:${port}`,
    namespace,
    podLabels: pod.labels,
    port: portOf(pod, port, what),
  });
  const out = all
    .filter((p) => p.annotations['prometheus.io/scrape'] === 'true')
    .map((p) => target(p, Number(p.annotations['prometheus.io/port']), 'prometheus.io/port'));
  for (const sm of ms.filter((m) => m.kind === 'ServiceMonitor')) {
    const services = ms.filter(
      (m) => m.kind === 'Service' && selects(sm.spec.selector.matchLabels, m.metadata.labels ?? {}),
    );
    for (const e of sm.spec.endpoints as { port: string }[])
      for (const svc of services) {
        const sp = svc.spec.ports.find((p: { name: string }) => p.name === e.port);
        if (!sp) continue;
        for (const pod of all.filter((p) => selects(svc.spec.selector, p.labels)))
          out.push(
            target(pod, sp.targetPort, `ServiceMonitor/${sm.metadata.name} Service/${svc.metadata.name}`),
          );
      }
  }
  for (const pm of ms.filter((m) => m.kind === 'PodMonitor'))
    for (const e of pm.spec.podMetricsEndpoints as { port: string }[])
      for (const pod of all.filter((p) => selects(pm.spec.selector.matchLabels, p.labels)))
        out.push(target(pod, e.port, `PodMonitor/${pm.metadata.name}`));
  return out;
}

const CASES: [string, RenderOptions][] = [
  ['defaults (pod annotations)', {}],
  ['ServiceMonitors', { set: { 'metrics.serviceMonitor.enabled': 'true' } }],
  ['PodMonitors', { set: { 'metrics.podMonitor.enabled': 'true' } }],
  ...PRESETS.map((p): [string, RenderOptions] => [basename(p), { files: [p] }]),
  [
    'standalone with PodMonitors',
    { files: [PRESETS[0]], set: { 'metrics.podMonitor.enabled': 'true', 'metrics.podAnnotations': 'false' } },
  ],
];

describe('a Prometheus in the monitoring namespace reaches every port marked for scraping', () => {
  it.each(CASES)('%s', async (_name, o) => {
    const ms = await render({ ...o, namespace: 'sluice' });
    const targets = scraped(ms, 'sluice');
    expect(targets.length).toBeGreaterThan(0);
    const refused = targets.filter((t) => !admits(ms, prometheus('monitoring'), t)).map((t) => t.what);
    expect(refused).toEqual([]);
  });

  it('the ServiceMonitor and PodMonitor cases find the ports they name (not only the annotations)', async () => {
    const sm = scraped(
      await render({ set: { 'metrics.serviceMonitor.enabled': 'true', 'metrics.podAnnotations': 'false' } }),
      'sluice',
    );
    expect(sm.map((t) => t.what).sort()).toEqual([
      'ServiceMonitor/gw-sluice-controller Service/gw-sluice-controller-metrics → Deployment/gw-sluice-controller:metrics',
      'ServiceMonitor/gw-sluice-dataplane Service/gw-sluice-admin → Deployment/gw-sluice-dataplane:admin',
    ]);
  });
});

describe('and no one else', () => {
  it('from another namespace the admin and controller metrics ports are closed; the proxy port is open', async () => {
    const ms = await render({ namespace: 'sluice' });
    const dp = pods(ms).find((p) => p.owner === 'Deployment/gw-sluice-dataplane')!;
    const ctl = pods(ms).find((p) => p.owner === 'Deployment/gw-sluice-controller')!;
    const at = (pod: Pod, port: string): Target => ({
      namespace: 'sluice',
      podLabels: pod.labels,
      port: portOf(pod, port, ''),
    });
    const stranger = prometheus('shop');
    expect(admits(ms, stranger, at(dp, 'admin'))).toBe(false);
    expect(admits(ms, stranger, at(ctl, 'metrics'))).toBe(false);
    expect(admits(ms, stranger, at(dp, 'http'))).toBe(true);
    // The controller, in the release's namespace, reaches the admin port.
    expect(
      admits(ms, { namespace: 'sluice', namespaceLabels: {}, podLabels: ctl.labels }, at(dp, 'admin')),
    ).toBe(true);
    // A pod of the release's namespace that is not the controller does not.
    expect(
      admits(ms, { namespace: 'sluice', namespaceLabels: {}, podLabels: { app: 'x' } }, at(dp, 'admin')),
    ).toBe(false);
  });

  it('metricsNamespace names another namespace, metricsPodLabels narrows it to Prometheus; "" admits none', async () => {
    const ms = await render({
      namespace: 'sluice',
      values: {
        networkPolicy: {
          metricsNamespace: 'observability',
          metricsPodLabels: { 'app.kubernetes.io/name': 'prometheus' },
        },
      },
    });
    const admin = scraped(ms, 'sluice').find((t) => t.what.includes('gw-sluice-dataplane:9901'))!;
    expect(admits(ms, prometheus('observability'), admin)).toBe(true);
    expect(admits(ms, prometheus('observability', { app: 'grafana' }), admin)).toBe(false);
    expect(admits(ms, prometheus('monitoring'), admin)).toBe(false);
    const none = await render({ namespace: 'sluice', values: { networkPolicy: { metricsNamespace: '' } } });
    expect(admits(none, prometheus('monitoring'), scraped(none, 'sluice')[0])).toBe(false);
    expect(find(none, 'NetworkPolicy', 'gw-sluice-controller').spec.ingress).toBeNull();
  });
});
