/**
 * The chart with the real helm (3.6.2): lint and template of the defaults and every preset,
 * values.schema.json refusing wrong values with the field named, and what the rendered
 * manifests promise: hardened pods, the heap sized from the limit, a drain that fits the grace
 * period, the admin token never in values, the Service, HTTPS and Redis wiring.
 * (test/chart/k8s/ applies them to an API server and runs what they describe.)
 */
import { appendFileSync, cpSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { CHART, find, helm, type Manifest, PRESETS, render, templateArgs } from './helm.ts';

const podSpecs = (ms: Manifest[]) =>
  ms
    .filter((m) => ['Deployment', 'StatefulSet', 'Pod'].includes(m.kind))
    .map((m) => ({
      name: `${m.kind}/${m.metadata.name}`,
      spec: m.kind === 'Pod' ? m.spec : m.spec.template.spec,
    }));
const container = (ms: Manifest[], deployment: string) =>
  find(ms, 'Deployment', deployment).spec.template.spec.containers[0];
const flag = (args: string[], name: string) => {
  const i = args.indexOf(name);
  return i < 0 ? undefined : args[i + 1];
};

describe('helm lint and template', () => {
  it.each<[string, string | null]>([
    ['defaults', null],
    ...PRESETS.map((p): [string, string] => [basename(p), p]),
  ])('%s: lint --strict passes and template renders', async (_name, preset) => {
    const files = preset ? ['-f', preset] : [];
    const lint = await helm(['lint', '--strict', CHART, ...files]);
    expect(lint.code, lint.stdout + lint.stderr).toBe(0);
    const ms = await render({ files: preset ? [preset] : [] });
    expect(ms.length).toBeGreaterThan(3);
    expect(ms.filter((m) => m.kind === 'Deployment').length).toBeGreaterThan(0);
  });

  it('presets: standalone has no controller and no RBAC; production autoscales and is monitored; small bundles Redis', async () => {
    const [standalone, small, production, kind] = await Promise.all(
      PRESETS.map((p) => render({ files: [p] })),
    );
    const kinds = (ms: Manifest[]) => new Set(ms.map((m) => m.kind));
    expect(standalone.some((m) => m.metadata.name.endsWith('-controller'))).toBe(false);
    expect([...kinds(standalone)].filter((k) => /Role/.test(k))).toEqual([]);
    expect(container(standalone, 'gw-sluice-dataplane').args.slice(0, 3)).toEqual([
      'run',
      '-f',
      '/etc/sluice/config',
    ]);
    expect(find(standalone, 'ConfigMap', 'gw-sluice-config').data['gateway.yaml']).toContain(
      'kind: GatewayRoute',
    );

    expect(kinds(production).has('HorizontalPodAutoscaler')).toBe(true);
    expect(production.filter((m) => m.kind === 'ServiceMonitor')).toHaveLength(2);
    expect(find(production, 'Deployment', 'gw-sluice-dataplane').spec.replicas).toBeUndefined();
    expect(find(production, 'Service', 'gw-sluice').spec.externalTrafficPolicy).toBe('Local');

    expect(find(small, 'StatefulSet', 'gw-sluice-redis').spec.replicas).toBe(1);
    expect(small.some((m) => m.kind === 'PodDisruptionBudget')).toBe(false);
    expect(find(kind, 'Service', 'gw-sluice').spec.ports[0]).toMatchObject({ nodePort: 30080, port: 80 });
  });
});

describe('Kubernetes version', () => {
  it('Chart.yaml declares no kubeVersion: helm 3.6.2 template without --kube-version assumes 1.20 and would refuse the chart', async () => {
    expect(parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')).kubeVersion).toBeUndefined();
    const copy = join(mkdtempSync(join(tmpdir(), 'sluice-kv-')), 'sluice');
    cpSync(CHART, copy, { recursive: true });
    appendFileSync(join(copy, 'Chart.yaml'), 'kubeVersion: ">=1.28.0-0"\n');
    const plain = await helm(['template', 'gw', copy]);
    expect(plain.code).not.toBe(0);
    expect(plain.stderr).toMatch(
      /chart requires kubeVersion: >=1\.28\.0-0 which is incompatible with Kubernetes v1\.20/,
    );
    expect((await helm(['template', 'gw', copy, '--kube-version', '1.28.0'])).code).toBe(0);
  });
});

describe('two installations', () => {
  it('className reaches the controller as --class; the Lease and the admin Service are per release', async () => {
    const [a, b] = await Promise.all([render(), render({ release: 'team-b', set: { className: 'team-b' } })]);
    const args = (ms: Manifest[], name: string) => container(ms, name).args as string[];
    expect(args(a, 'gw-sluice-controller')).not.toContain('--class');
    expect(flag(args(b, 'team-b-sluice-controller'), '--class')).toBe('team-b');
    expect(flag(args(a, 'gw-sluice-controller'), '--lease-name')).not.toBe(
      flag(args(b, 'team-b-sluice-controller'), '--lease-name'),
    );
    expect(flag(args(a, 'gw-sluice-controller'), '--dataplane-service')).not.toBe(
      flag(args(b, 'team-b-sluice-controller'), '--dataplane-service'),
    );
  });

  it('gatewayAPI.controllerName reaches the controller as --gateway-controller-name and the GatewayClass the chart installs', async () => {
    const teamB = 'sluice.dev/gateway-controller-team-b';
    const on = { 'gatewayAPI.gatewayClass.create': 'true' };
    const [a, b] = await Promise.all([
      render({ set: on }),
      render({ release: 'team-b', set: { ...on, 'gatewayAPI.controllerName': teamB } }),
    ]);
    const args = (ms: Manifest[], name: string) => container(ms, name).args as string[];
    expect(flag(args(a, 'gw-sluice-controller'), '--gateway-controller-name')).toBe(
      'sluice.dev/gateway-controller',
    );
    expect(flag(args(b, 'team-b-sluice-controller'), '--gateway-controller-name')).toBe(teamB);
    expect(find(a, 'GatewayClass', 'sluice').spec.controllerName).toBe('sluice.dev/gateway-controller');
    expect(find(b, 'GatewayClass', 'sluice').spec.controllerName).toBe(teamB);
  });

  it('a gatewayAPI.controllerName that is not a domain-prefixed path is refused, naming it', async () => {
    const r = await helm(['template', 'gw', CHART, '--set', 'gatewayAPI.controllerName=team-b']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('gatewayAPI.controllerName');
  });
});

describe('Gateway API', () => {
  it("each Gateway's Service: --gateway-service-type from gatewayAPI.serviceType (LoadBalancer by default), --gateway-service-selector the data-plane pods' labels", async () => {
    const [defaults, clusterIp, off] = await Promise.all([
      render(),
      render({ set: { 'gatewayAPI.serviceType': 'ClusterIP' } }),
      render({ set: { 'gatewayAPI.enabled': 'false' } }),
    ]);
    const args = (ms: Manifest[]) => container(ms, 'gw-sluice-controller').args as string[];
    expect(flag(args(defaults), '--gateway-service-type')).toBe('LoadBalancer');
    expect(flag(args(clusterIp), '--gateway-service-type')).toBe('ClusterIP');
    const pods = find(defaults, 'Deployment', 'gw-sluice-dataplane').spec.template.metadata.labels;
    const selector = Object.fromEntries(
      flag(args(defaults), '--gateway-service-selector')!
        .split(',')
        .map((kv) => kv.split('=')),
    );
    expect(Object.keys(selector).length).toBeGreaterThan(1);
    expect(pods).toMatchObject(selector);
    expect(selector).toEqual(find(defaults, 'Deployment', 'gw-sluice-dataplane').spec.selector.matchLabels);
    expect(args(off)).not.toContain('--gateway-service-selector');
    // The NetworkPolicy admits the listener port range (public, like the proxy ports); off: not.
    const ranges = (ms: Manifest[]) =>
      find(ms, 'NetworkPolicy', 'gw-sluice-dataplane').spec.ingress.filter(
        (r: { ports: { endPort?: number }[]; from?: unknown }) =>
          r.ports.some((p) => p.endPort !== undefined),
      );
    expect(ranges(defaults)).toEqual([{ ports: [{ port: 20000, endPort: 20999, protocol: 'TCP' }] }]);
    expect(ranges(off)).toEqual([]);
    // A GatewayClass only when asked.
    expect(defaults.filter((m) => m.kind === 'GatewayClass')).toEqual([]);
    const withClass = await render({ set: { 'gatewayAPI.gatewayClass.create': 'true' } });
    expect(find(withClass, 'GatewayClass', 'sluice').spec.controllerName).toBe(
      'sluice.dev/gateway-controller',
    );
    const wrong = await helm(['template', 'gw', CHART, '--set', 'gatewayAPI.serviceType=External']);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toMatch(/gatewayAPI\.serviceType/);
  });
});

describe('values.schema.json', () => {
  it.each([
    ['dataplane.replicas', 'two', /dataplane\.replicas: Invalid type\. Expected: integer, given: string/],
    ['proxy.service.type', 'Public', /proxy\.service\.type: proxy\.service\.type must be one of/],
    [
      'controller.leaseSeconds',
      'true',
      /controller\.leaseSeconds: Invalid type\. Expected: integer, given: boolean/,
    ],
    [
      'dataplane.resources.limits.memory',
      '1.5Gi',
      /dataplane\.resources\.limits\.memory: Does not match pattern/,
    ],
    ['dataplane.replics', '3', /dataplane: Additional property replics is not allowed/],
    ['watchNamespaces[0]', 'Not_A_Namespace', /watchNamespaces\.0: Does not match pattern/],
    ['className', 'team b', /className: Does not match pattern/],
  ])('refuses %s=%s at template (and install) time, naming the field', async (key, value, message) => {
    const r = await helm([...templateArgs(), '--set', `${key}=${value}`]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/values don't meet the specifications of the schema/);
    expect(r.stderr).toMatch(message);
  });
});

describe('rendered pods', () => {
  it('every pod of every preset meets the restricted Pod Security Standard', async () => {
    for (const preset of [null, ...PRESETS]) {
      const ms = await render({
        files: preset ? [preset] : [],
        set: preset ? {} : { 'redis.bundled.enabled': 'true', 'proxy.https.enabled': 'true' },
      });
      for (const { name, spec } of podSpecs(ms)) {
        const where = `${preset ?? 'defaults'}: ${name}`;
        expect(spec.securityContext, where).toMatchObject({
          runAsNonRoot: true,
          seccompProfile: { type: 'RuntimeDefault' },
        });
        expect(spec.securityContext.runAsUser, where).toBeGreaterThan(0);
        expect(spec.hostNetwork ?? false, where).toBe(false);
        expect(
          (spec.volumes ?? []).every((v: object) => !('hostPath' in v)),
          where,
        ).toBe(true);
        for (const c of [...spec.containers, ...(spec.initContainers ?? [])])
          expect(c.securityContext, `${where} ${c.name}`).toEqual({
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            runAsNonRoot: true,
            capabilities: { drop: ['ALL'] },
            seccompProfile: { type: 'RuntimeDefault' },
          });
      }
    }
  });

  it('the data plane has no Kubernetes API access: no token mounted, no RBAC bound to its ServiceAccount', async () => {
    const ms = await render();
    const pod = find(ms, 'Deployment', 'gw-sluice-dataplane').spec.template.spec;
    expect(pod.serviceAccountName).toBe('gw-sluice-dataplane');
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(find(ms, 'ServiceAccount', 'gw-sluice-dataplane').automountServiceAccountToken).toBe(false);
    const subjects = ms.filter((m) => m.kind.endsWith('Binding')).flatMap((m) => m.subjects);
    expect(subjects.map((s) => s.name)).not.toContain('gw-sluice-dataplane');
  });

  it("the data plane's NODE_OPTIONS: the old generation at 75% of the memory limit (split across workers), semi-space 16 MB", async () => {
    const nodeOptions = async (set: Record<string, string>, deployment = 'gw-sluice-dataplane') =>
      container(await render({ set }), deployment).env.find(
        (e: { name: string }) => e.name === 'NODE_OPTIONS',
      )?.value;
    expect(await nodeOptions({})).toBe('--max-old-space-size=384 --max-semi-space-size=16');
    expect(await nodeOptions({ 'dataplane.resources.limits.memory': '1Gi' })).toBe(
      '--max-old-space-size=768 --max-semi-space-size=16',
    );
    expect(await nodeOptions({ 'dataplane.resources.limits.memory': '2Gi', 'dataplane.workers': '4' })).toBe(
      '--max-old-space-size=384 --max-semi-space-size=16',
    );
    // 1 G = 953 MiB (whole MiB), 75% of it 714.
    expect(await nodeOptions({ 'dataplane.resources.limits.memory': '1G' })).toBe(
      '--max-old-space-size=714 --max-semi-space-size=16',
    );
    expect(await nodeOptions({ 'dataplane.resources.limits.memory': '1073741824' })).toBe(
      '--max-old-space-size=768 --max-semi-space-size=16',
    );
    expect(await nodeOptions({ 'dataplane.resources.limits.memory': 'null' })).toBe(
      '--max-semi-space-size=16',
    );
  });

  it("the controller's old generation: what the memory limit leaves after heapReserveMiB; too little fails naming both", async () => {
    const nodeOptions = async (set: Record<string, string>) =>
      container(await render({ set }), 'gw-sluice-controller').env.find(
        (e: { name: string }) => e.name === 'NODE_OPTIONS',
      )?.value;
    expect(await nodeOptions({})).toBe('--max-old-space-size=160');
    expect(await nodeOptions({ 'controller.resources.limits.memory': '192Mi' })).toBe(
      '--max-old-space-size=96',
    );
    expect(
      await nodeOptions({ 'controller.resources.limits.memory': '1Gi', 'controller.heapReserveMiB': '128' }),
    ).toBe('--max-old-space-size=896');
    expect(await nodeOptions({ 'controller.resources.limits.memory': 'null' })).toBeUndefined();
    await expect(render({ set: { 'controller.resources.limits.memory': '128Mi' } })).rejects.toThrow(
      /controller\.resources\.limits\.memory 128Mi leaves 32 MiB of heap after controller\.heapReserveMiB \(96\)/,
    );
  });

  it("the controller's young generation: SLUICE_NODE_FLAG, which the binary's #! line passes after its own", async () => {
    const flag = async (set: Record<string, string>) =>
      container(await render({ set }), 'gw-sluice-controller').env.find(
        (e: { name: string }) => e.name === 'SLUICE_NODE_FLAG',
      )?.value;
    expect(await flag({})).toBe('--max-semi-space-size=4');
    expect(await flag({ 'controller.semiSpaceMiB': '8' })).toBe('--max-semi-space-size=8');
    expect(await flag({ 'controller.resources.limits.memory': 'null' })).toBe('--max-semi-space-size=4');
    expect(
      container(await render({}), 'gw-sluice-dataplane').env.map((e: { name: string }) => e.name),
    ).not.toContain('SLUICE_NODE_FLAG');
  });

  it('a rolling update loses no request: grace period = preStop + 2 x drain + 5 s; no old pod leaves before a new one is ready', async () => {
    const ms = await render({ set: { 'dataplane.preStopSeconds': '7', 'dataplane.drainSeconds': '20' } });
    const d = find(ms, 'Deployment', 'gw-sluice-dataplane');
    const pod = d.spec.template.spec;
    expect(pod.terminationGracePeriodSeconds).toBe(7 + 2 * 20 + 5);
    expect(flag(pod.containers[0].args, '--drain-timeout-ms')).toBe('20000');
    expect(pod.containers[0].lifecycle.preStop.exec.command).toEqual(['sleep', '7']);
    expect(d.spec.strategy.rollingUpdate).toEqual({ maxSurge: 1, maxUnavailable: 0 });
    expect(pod.containers[0].readinessProbe.httpGet).toEqual({
      path: '/readyz',
      port: 'admin',
      scheme: 'HTTP',
    });
    expect(pod.containers[0].livenessProbe.httpGet).toEqual({
      path: '/healthz',
      port: 'admin',
      scheme: 'HTTP',
    });
    expect(pod.volumes.find((v: { name: string }) => v.name === 'state').emptyDir).toBeDefined();
    expect(flag(pod.containers[0].args, '--state-dir')).toBe('/var/lib/sluice');
  });

  it('overload: --max-in-flight from dataplane.maxInFlight (10000 by default), --adaptive-concurrency when on', async () => {
    const args = async (set: Record<string, string>) =>
      find(await render({ set }), 'Deployment', 'gw-sluice-dataplane').spec.template.spec.containers[0]
        .args as string[];
    const byDefault = await args({});
    expect(flag(byDefault, '--max-in-flight')).toBe('10000');
    expect(byDefault).not.toContain('--adaptive-concurrency');
    const set = await args({ 'dataplane.maxInFlight': '500', 'dataplane.adaptiveConcurrency': 'true' });
    expect(flag(set, '--max-in-flight')).toBe('500');
    expect(set).toContain('--adaptive-concurrency');
  });
});

describe('admin token, Services, HTTPS, Redis', () => {
  it('the admin token is a generated Secret (48 random characters, new per render) unless existingSecret names one', async () => {
    const token = async () =>
      Buffer.from(find(await render(), 'Secret', 'gw-sluice-admin-token').data.token, 'base64').toString();
    const [a, b] = await Promise.all([token(), token()]);
    expect(a).toMatch(/^[A-Za-z0-9]{48}$/);
    expect(a).not.toBe(b);
    const given = await render({ set: { 'admin.existingSecret': 'my-token' } });
    expect(given.some((m) => m.kind === 'Secret' && m.metadata.name === 'gw-sluice-admin-token')).toBe(false);
    for (const d of ['gw-sluice-dataplane', 'gw-sluice-controller'])
      expect(find(given, 'Deployment', d).spec.template.spec.volumes).toContainEqual({
        name: 'admin-token',
        secret: { secretName: 'my-token', items: [{ key: 'token', path: 'token' }] },
      });
  });

  it('the proxy Service: type, externalTrafficPolicy only where it applies, annotations, http 80 -> 8080', async () => {
    const svc = async (set: Record<string, string>) =>
      find(await render({ set }), 'Service', 'gw-sluice').spec;
    expect(await svc({})).toMatchObject({ type: 'LoadBalancer', externalTrafficPolicy: 'Cluster' });
    expect((await svc({})).ports).toEqual([{ name: 'http', port: 80, targetPort: 'http' }]);
    const cip = await svc({
      'proxy.service.type': 'ClusterIP',
      'proxy.service.externalTrafficPolicy': 'Local',
    });
    expect(cip.externalTrafficPolicy).toBeUndefined();
    const ann = await render({ set: { 'proxy.service.annotations.example\\.com/lb': 'internal' } });
    expect(find(ann, 'Service', 'gw-sluice').metadata.annotations).toEqual({ 'example.com/lb': 'internal' });
    const admin = find(await render(), 'Service', 'gw-sluice-admin').spec;
    expect(admin).toMatchObject({
      clusterIP: 'None',
      ports: [{ name: 'admin', port: 9901, targetPort: 'admin' }],
    });
  });

  it('HTTPS: --https-port 8443 and the default certificate mounted from its Secret; Service 443 -> 8443', async () => {
    const ms = await render({
      set: { 'proxy.https.enabled': 'true', 'proxy.https.defaultCertificateSecret': 'gw-cert' },
    });
    const c = container(ms, 'gw-sluice-dataplane');
    expect(flag(c.args, '--https-port')).toBe('8443');
    expect(flag(c.args, '--tls-default-cert')).toBe('/etc/sluice/tls/tls.crt');
    expect(flag(c.args, '--tls-default-key')).toBe('/etc/sluice/tls/tls.key');
    expect(c.volumeMounts).toContainEqual({ name: 'tls', mountPath: '/etc/sluice/tls', readOnly: true });
    expect(find(ms, 'Deployment', 'gw-sluice-dataplane').spec.template.spec.volumes).toContainEqual({
      name: 'tls',
      secret: {
        secretName: 'gw-cert',
        items: [
          { key: 'tls.crt', path: 'tls.crt' },
          { key: 'tls.key', path: 'tls.key' },
        ],
      },
    });
    expect(find(ms, 'Service', 'gw-sluice').spec.ports).toContainEqual({
      name: 'https',
      port: 443,
      targetPort: 'https',
    });
    const off = container(await render(), 'gw-sluice-dataplane');
    expect(off.args).not.toContain('--https-port');
  });

  it('Redis: the URL comes from a Secret (given, or the bundled one), never from values', async () => {
    const env = async (set: Record<string, string>) =>
      container(await render({ set }), 'gw-sluice-dataplane').env.find(
        (e: { name: string }) => e.name === 'SLUICE_REDIS_URL',
      );
    expect(await env({})).toBeUndefined();
    expect(await env({ 'redis.existingSecret': 'r', 'redis.existingSecretKey': 'sentinel' })).toEqual({
      name: 'SLUICE_REDIS_URL',
      valueFrom: { secretKeyRef: { name: 'r', key: 'sentinel' } },
    });
    const bundled = await render({ set: { 'redis.bundled.enabled': 'true' } });
    expect(find(bundled, 'Secret', 'gw-sluice-redis-url').stringData.url).toBe(
      'redis://gw-sluice-redis.sluice.svc:6379',
    );
    expect(await env({ 'redis.bundled.enabled': 'true' })).toEqual({
      name: 'SLUICE_REDIS_URL',
      valueFrom: { secretKeyRef: { name: 'gw-sluice-redis-url', key: 'url' } },
    });
  });

  it('NetworkPolicy: the admin port admits only the controller and the metrics scrapers (the monitoring namespace by default)', async () => {
    const np = find(await render(), 'NetworkPolicy', 'gw-sluice-dataplane').spec;
    const admin = np.ingress.filter((r: { ports: { port: string }[] }) =>
      r.ports.some((p) => p.port === 'admin'),
    );
    expect(admin).toEqual([
      {
        from: [
          {
            podSelector: {
              matchLabels: {
                'app.kubernetes.io/name': 'sluice',
                'app.kubernetes.io/instance': 'gw',
                'app.kubernetes.io/component': 'controller',
              },
            },
          },
        ],
        ports: [{ port: 'admin', protocol: 'TCP' }],
      },
      {
        from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
        ports: [{ port: 'admin', protocol: 'TCP' }],
      },
    ]);
    expect(np.ingress).toContainEqual({ ports: [{ port: 'http', protocol: 'TCP' }] });
  });
});

describe('pod annotations', () => {
  it('prometheus.io/* point at each metrics port unless metrics.podAnnotations is off; standalone pods roll when the config changes', async () => {
    const annotations = async (o: Parameters<typeof render>[0], d: string) =>
      find(await render(o), 'Deployment', d).spec.template.metadata.annotations;
    expect(await annotations({}, 'gw-sluice-dataplane')).toEqual({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': '9901',
      'prometheus.io/path': '/metrics',
    });
    expect(await annotations({}, 'gw-sluice-controller')).toMatchObject({ 'prometheus.io/port': '9902' });
    expect(
      await annotations({ set: { 'metrics.podAnnotations': 'false' } }, 'gw-sluice-dataplane'),
    ).toBeUndefined();
    const alone = (config: string) =>
      annotations({ files: [PRESETS[0]], values: { standalone: { config } } }, 'gw-sluice-dataplane');
    const [a, b] = await Promise.all([alone('kind: GatewayRoute # a'), alone('kind: GatewayRoute # b')]);
    expect(a['checksum/config']).toMatch(/^[0-9a-f]{64}$/);
    expect(a['checksum/config']).not.toBe(b['checksum/config']);
  });
});
