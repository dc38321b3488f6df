/**
 * The values a platform team sets around the chart's own choices, rendered with the real helm:
 * extra environment and volumes, startup probes, ServiceAccounts per component (workload
 * identity), pod labels and annotations, topology spread, priority classes, PodMonitors,
 * extraObjects, and the `helm test` pod.
 */
import { describe, expect, it } from 'vitest';
import { find, helm, type Manifest, PRESETS, render, templateArgs } from './helm.ts';

const COMPONENTS = [
  ['controller', 'gw-sluice-controller', 'metrics'],
  ['dataplane', 'gw-sluice-dataplane', 'admin'],
] as const;
const pod = (ms: Manifest[], deployment: string) => find(ms, 'Deployment', deployment).spec.template;
const container = (ms: Manifest[], deployment: string) => pod(ms, deployment).spec.containers[0];
const both = (v: object) => ({ controller: v, dataplane: v });
const selector = (component: string) => ({
  'app.kubernetes.io/name': 'sluice',
  'app.kubernetes.io/instance': 'gw',
  'app.kubernetes.io/component': component,
});

describe('environment and volumes', () => {
  it("extraEnv after the chart's variables, envFrom as given; neither by default", async () => {
    const extraEnv = [
      { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: 'http://otel.monitoring:4318' },
      { name: 'FROM_SECRET', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } },
    ];
    const envFrom = [{ configMapRef: { name: 'otel' } }, { secretRef: { name: 'otel-auth' }, prefix: 'X_' }];
    const [set, plain] = await Promise.all([render({ values: both({ extraEnv, envFrom }) }), render()]);
    for (const [, deployment] of COMPONENTS) {
      const c = container(set, deployment);
      expect(c.env.slice(-2), deployment).toEqual(extraEnv);
      expect(c.env[0].name, deployment).toBe('NODE_OPTIONS');
      expect(c.envFrom, deployment).toEqual(envFrom);
      expect(container(plain, deployment).envFrom, deployment).toBeUndefined();
      expect(container(plain, deployment).env.map((e: { name: string }) => e.name)).not.toContain(
        'OTEL_EXPORTER_OTLP_ENDPOINT',
      );
    }
  });

  it("extraVolumes on the pod, extraVolumeMounts on the container, after the chart's own", async () => {
    const ms = await render({
      values: both({
        extraVolumes: [{ name: 'ca', configMap: { name: 'corp-ca' } }],
        extraVolumeMounts: [{ name: 'ca', mountPath: '/etc/ssl/corp', readOnly: true }],
      }),
    });
    for (const [, deployment] of COMPONENTS) {
      const spec = pod(ms, deployment).spec;
      expect(spec.volumes.at(-1)).toEqual({ name: 'ca', configMap: { name: 'corp-ca' } });
      expect(spec.volumes.map((v: { name: string }) => v.name)).toContain('admin-token');
      expect(spec.containers[0].volumeMounts.at(-1)).toEqual({
        name: 'ca',
        mountPath: '/etc/ssl/corp',
        readOnly: true,
      });
    }
  });
});

describe('probes', () => {
  it('a startupProbe on /healthz of each metrics port by default (60 s: 30 x 2 s), tunable, removable', async () => {
    const [defaults, slow, off] = await Promise.all([
      render(),
      render({ values: both({ startupProbe: { periodSeconds: 5, failureThreshold: 60 } }) }),
      render({ values: both({ startupProbe: { enabled: false } }) }),
    ]);
    for (const [, deployment, port] of COMPONENTS) {
      expect(container(defaults, deployment).startupProbe).toEqual({
        httpGet: { path: '/healthz', port, scheme: 'HTTP' },
        periodSeconds: 2,
        failureThreshold: 30,
      });
      // The probe's port is one the container declares.
      expect(container(defaults, deployment).ports.map((p: { name: string }) => p.name)).toContain(port);
      expect(container(slow, deployment).startupProbe).toMatchObject({
        periodSeconds: 5,
        failureThreshold: 60,
      });
      expect(container(off, deployment).startupProbe).toBeUndefined();
      expect(container(off, deployment).livenessProbe).toBeDefined();
    }
  });
});

describe('ServiceAccounts per component', () => {
  it("by default: <fullname>-<component>, created, annotations per component; the data plane's mounts no token", async () => {
    const ms = await render({
      values: {
        controller: { serviceAccount: { annotations: { 'iam.gke.io/gcp-service-account': 'ctl@p.iam' } } },
        dataplane: {
          serviceAccount: { annotations: { 'eks.amazonaws.com/role-arn': 'arn:aws:iam::1:role/dp' } },
        },
      },
    });
    expect(find(ms, 'ServiceAccount', 'gw-sluice-controller').metadata.annotations).toEqual({
      'iam.gke.io/gcp-service-account': 'ctl@p.iam',
    });
    const dp = find(ms, 'ServiceAccount', 'gw-sluice-dataplane');
    expect(dp.metadata.annotations).toEqual({ 'eks.amazonaws.com/role-arn': 'arn:aws:iam::1:role/dp' });
    expect(dp.automountServiceAccountToken).toBe(false);
    for (const [, deployment] of COMPONENTS)
      expect(pod(ms, deployment).spec.serviceAccountName).toBe(deployment);
  });

  it('create: false with a name: no ServiceAccount rendered, the pods and every RBAC binding use the name', async () => {
    const ms = await render({
      values: {
        controller: { serviceAccount: { create: false, name: 'platform-ctl' } },
        dataplane: { serviceAccount: { create: false, name: 'platform-dp' } },
      },
    });
    expect(ms.filter((m) => m.kind === 'ServiceAccount')).toEqual([]);
    expect(pod(ms, 'gw-sluice-controller').spec.serviceAccountName).toBe('platform-ctl');
    expect(pod(ms, 'gw-sluice-dataplane').spec.serviceAccountName).toBe('platform-dp');
    expect(pod(ms, 'gw-sluice-dataplane').spec.automountServiceAccountToken).toBe(false);
    const bindings = ms.filter((m) => m.kind.endsWith('Binding'));
    expect(bindings.length).toBeGreaterThan(1);
    for (const b of bindings)
      expect(b.subjects, b.metadata.name).toEqual([
        { kind: 'ServiceAccount', name: 'platform-ctl', namespace: 'sluice' },
      ]);
  });

  it('a name with create: true names the created ServiceAccount', async () => {
    const ms = await render({ values: { controller: { serviceAccount: { name: 'gw-ctl' } } } });
    expect(find(ms, 'ServiceAccount', 'gw-ctl').kind).toBe('ServiceAccount');
    expect(pod(ms, 'gw-sluice-controller').spec.serviceAccountName).toBe('gw-ctl');
  });
});

describe('pod metadata and scheduling', () => {
  it('podLabels on the pods (not in the selector), podAnnotations beside the scrape annotations', async () => {
    const ms = await render({
      values: both({ podLabels: { team: 'edge' }, podAnnotations: { 'example.com/owner': 'edge' } }),
    });
    for (const [component, deployment, port] of COMPONENTS) {
      const d = find(ms, 'Deployment', deployment);
      expect(d.spec.template.metadata.labels).toMatchObject({ team: 'edge', ...selector(component) });
      expect(d.spec.selector.matchLabels).toEqual(selector(component));
      expect(d.spec.template.metadata.annotations).toMatchObject({
        'example.com/owner': 'edge',
        'prometheus.io/port': port === 'admin' ? '9901' : '9902',
      });
    }
  });

  it("topologySpreadConstraints replace the chart's; an entry without labelSelector gets the component's pods", async () => {
    const own = { matchLabels: { tier: 'edge' } };
    const [defaults, set] = await Promise.all([
      render(),
      render({
        values: both({
          topologySpreadConstraints: [
            { maxSkew: 2, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'DoNotSchedule' },
            {
              maxSkew: 1,
              topologyKey: 'example.com/rack',
              whenUnsatisfiable: 'ScheduleAnyway',
              labelSelector: own,
            },
          ],
        }),
      }),
    ]);
    for (const [component, deployment] of COMPONENTS) {
      expect(pod(set, deployment).spec.topologySpreadConstraints).toEqual([
        {
          maxSkew: 2,
          topologyKey: 'topology.kubernetes.io/zone',
          whenUnsatisfiable: 'DoNotSchedule',
          labelSelector: { matchLabels: selector(component) },
        },
        {
          maxSkew: 1,
          topologyKey: 'example.com/rack',
          whenUnsatisfiable: 'ScheduleAnyway',
          labelSelector: own,
        },
      ]);
      expect(pod(defaults, deployment).spec.topologySpreadConstraints[0].topologyKey).toBe(
        'kubernetes.io/hostname',
      );
    }
    expect(pod(defaults, 'gw-sluice-dataplane').spec.topologySpreadConstraints).toHaveLength(2);
  });

  it('priorityClassName per component, absent by default', async () => {
    const [defaults, set] = await Promise.all([
      render(),
      render({
        values: {
          controller: { priorityClassName: 'platform' },
          dataplane: { priorityClassName: 'edge-critical' },
        },
      }),
    ]);
    expect(pod(set, 'gw-sluice-controller').spec.priorityClassName).toBe('platform');
    expect(pod(set, 'gw-sluice-dataplane').spec.priorityClassName).toBe('edge-critical');
    for (const [, deployment] of COMPONENTS)
      expect(pod(defaults, deployment).spec.priorityClassName).toBeUndefined();
  });
});

describe('PodMonitor', () => {
  it("one per component on the port the pods' metrics are on; standalone: the data plane's only", async () => {
    const [ms, standalone, off] = await Promise.all([
      render({
        values: { metrics: { podMonitor: { enabled: true, interval: '15s', labels: { release: 'kps' } } } },
      }),
      render({ files: [PRESETS[0]], values: { metrics: { podMonitor: { enabled: true } } } }),
      render(),
    ]);
    for (const [component, deployment, port] of COMPONENTS) {
      const pm = find(ms, 'PodMonitor', deployment);
      expect(pm.metadata.labels?.release).toBe('kps');
      expect(pm.spec.selector.matchLabels).toEqual(selector(component));
      expect(pm.spec.podMetricsEndpoints).toEqual([{ port, path: '/metrics', interval: '15s' }]);
      // The selector selects the pods, whose container declares that port.
      expect(pod(ms, deployment).metadata.labels).toMatchObject(pm.spec.selector.matchLabels);
      expect(container(ms, deployment).ports.map((p: { name: string }) => p.name)).toContain(port);
    }
    expect(standalone.filter((m) => m.kind === 'PodMonitor').map((m) => m.metadata.name)).toEqual([
      'gw-sluice-dataplane',
    ]);
    expect(off.filter((m) => m.kind === 'PodMonitor')).toEqual([]);
  });

  it('refuses podMonitor and serviceMonitor together (every pod scraped twice)', async () => {
    const r = await helm([
      ...templateArgs(),
      '--set',
      'metrics.podMonitor.enabled=true',
      '--set',
      'metrics.serviceMonitor.enabled=true',
    ]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/metrics\.podMonitor and metrics\.serviceMonitor: enable one, not both/);
  });
});

describe('extraObjects', () => {
  it('objects and YAML strings, each rendered with tpl', async () => {
    const ms = await render({
      values: {
        extraObjects: [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: '{{ .Release.Name }}-extra' },
            data: { a: 'b' },
          },
          'apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ include "sluice.fullname" . }}-otel\nstringData:\n  ns: {{ .Release.Namespace }}\n',
        ],
      },
    });
    expect(find(ms, 'ConfigMap', 'gw-extra').data).toEqual({ a: 'b' });
    expect(find(ms, 'Secret', 'gw-sluice-otel').stringData).toEqual({ ns: 'sluice' });
  });
});

describe('helm test', () => {
  it('a test hook pod GETs tests.path through the proxy Service; off: none', async () => {
    const [defaults, set, off] = await Promise.all([
      render(),
      render({
        values: {
          proxy: { service: { ports: { http: 8000 } } },
          tests: { path: '/healthz', host: 'api.example.com', expectStatus: 200 },
        },
      }),
      render({ values: { tests: { enabled: false } } }),
    ]);
    const t = find(defaults, 'Pod', 'gw-sluice-test-proxy');
    expect(t.metadata.annotations?.['helm.sh/hook']).toBe('test');
    expect(t.spec.restartPolicy).toBe('Never');
    const env = (ms: Manifest[]) =>
      Object.fromEntries(
        find(ms, 'Pod', 'gw-sluice-test-proxy').spec.containers[0].env.map(
          (e: { name: string; value: string }) => [e.name, e.value],
        ),
      );
    expect(env(defaults)).toEqual({
      SLUICE_TEST_URL: 'http://gw-sluice.sluice.svc:80/',
      SLUICE_TEST_HOST: '',
      SLUICE_TEST_EXPECT: '0',
    });
    expect(env(set)).toEqual({
      SLUICE_TEST_URL: 'http://gw-sluice.sluice.svc:8000/healthz',
      SLUICE_TEST_HOST: 'api.example.com',
      SLUICE_TEST_EXPECT: '200',
    });
    // The URL's host is the proxy Service, and its port the Service's http port.
    const svc = find(set, 'Service', 'gw-sluice');
    expect(svc.spec.ports[0]).toMatchObject({ name: 'http', port: 8000 });
    expect(off.filter((m) => m.kind === 'Pod')).toEqual([]);
  });
});
