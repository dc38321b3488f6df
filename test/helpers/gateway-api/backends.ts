/**
 * The back ends of the Gateway API conformance suite, on kapi: the objects of
 * conformance/base/manifests.yaml (namespaces, Gateways, Services…) applied, and each of its
 * Deployments run as echo servers in this process, one per replica, each "pod" on a loopback
 * address of its own (127.0.3.N: Linux routes all of 127/8 to lo, as pods have an IP each),
 * answering with the pod's namespace and name (`<deployment>-<n>`). kapi runs no controllers, so
 * this also does what a cluster's EndpointSlice controller would: each Service with a selector
 * gets EndpointSlices listing the pods it selects (ready, the Service port's name, the target
 * port the pod listens on; label kubernetes.io/service-name), and Services get no cluster IP.
 *
 * Which ports a pod serves: echo-basic's (the image every base Deployment runs), not the
 * Deployment's containerPorts, which base declares none of: HTTP_PORT (3000: HTTP/1.1, h2c,
 * WebSocket), H2C_PORT (3001: h2c only), HTTPS_PORT (8443) when TLS_SERVER_CERT is set, with the
 * certificate of the Secret mounted (when that Secret exists); with GRPC_ECHO_SERVER, only the
 * gRPC echo on 3000. Declared containerPorts are served too (plain echo). A port taken on that
 * address is replaced by a free one, and the pod's endpoints say so (pods whose ports differ get
 * an EndpointSlice of their own, as in a cluster). Deployments echo.ts cannot stand in for (TCP
 * and UDP echo, coredns) run no pods: `skipped` says which and why.
 *
 * The suite's setup also creates TLS Secrets its tests refer to (gateway listeners' and backend
 * certificates): made here too, signed by one test CA (`ca`) rather than self-signed.
 */
import { makePki } from '../../tls/pki.ts';
import { kubectl, ok } from '../kubectl.ts';
import { type Channel, installGatewayApiCrds } from './crds.ts';
import { startEcho, type EchoAnswer, type EchoServer } from './echo.ts';
import { startGrpcEcho } from './grpc-echo.ts';
import {
  applyObjects,
  deleteObjects,
  type KubeObject,
  type Placeholders,
  RUN_IN_PROCESS,
  readConformance,
} from './manifests.ts';

export interface Pod {
  namespace: string;
  /** `<deployment>-<n>`, n from 1. */
  name: string;
  deployment: string;
  address: string;
  labels: Record<string, string>;
  /** Port echo-basic would listen on → the port it listens on (the same unless that one was taken). */
  ports: Map<number, number>;
  servers: EchoServer[];
}

export interface Endpoint {
  namespace: string;
  pod: string;
  address: string;
  port: number;
}

/** What one add() started, for remove(). */
export interface Started {
  pods: Pod[];
  services: string[];
}

export interface Backends {
  pods: Pod[];
  /** Deployments (or ports of them) not run, with the reason. */
  skipped: Array<{ namespace: string; deployment: string; reason: string }>;
  /** PEM of the CA that signed the suite's TLS Secrets. */
  ca: string;
  /** The pods Service namespace/name selects. */
  podsOf(namespace: string, service: string): Pod[];
  /**
   * Where the Service's port (its number or name; the first port if absent) is served: each
   * selected pod's address and the port it listens on for that port's targetPort.
   */
  endpoints(namespace: string, service: string, port?: number | string): Endpoint[];
  /** Every request the pods of the Service received (all pods in the namespace if no service). */
  requests(namespace: string, service?: string): EchoAnswer[];
  /** Runs the Deployments among `objects` and writes the EndpointSlices of the Services among them. */
  add(objects: readonly KubeObject[]): Promise<Started>;
  /** Stops what add() started, deletes its Services' slices and rewrites those of Services it touched. */
  remove(started: Started): Promise<void>;
  /** Stops every pod and deletes every EndpointSlice written (the applied objects stay, as upstream's base). */
  stop(): Promise<void>;
}

export interface BackendsOptions extends Placeholders {
  /** First three octets of the pods' addresses (default 127.0.3). */
  addressPrefix?: string;
  /** The Gateway API CRDs' channel (default standard). */
  channel?: Channel;
}

const MANAGED_BY = 'gateway-api-harness.sluice.dev';

// Addresses in use in this process, so two sets of back ends never share one.
const inUse = new Set<string>();
function allocate(prefix: string): string {
  for (let i = 1; i < 255; i++) {
    const a = `${prefix}.${i}`;
    if (!inUse.has(a)) {
      inUse.add(a);
      return a;
    }
  }
  throw new Error(`no free address left in ${prefix}.0/24`);
}

interface Container {
  image?: string;
  env?: Array<{ name: string; value?: string }>;
  ports?: Array<{ containerPort: number; name?: string }>;
  volumeMounts?: Array<{ name: string }>;
}
interface PodTemplate {
  metadata?: { labels?: Record<string, string> };
  spec?: {
    containers?: Container[];
    volumes?: Array<{ name: string; secret?: { secretName: string } }>;
  };
}
interface ServicePort {
  name?: string;
  port: number;
  targetPort?: number | string;
  protocol?: string;
  appProtocol?: string;
}

const key = (namespace: string, name: string) => `${namespace}/${name}`;
const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

/** Starts a server on `port`, or on a free port if that one is taken on this address. */
async function listen(start: (port: number) => Promise<EchoServer>, port: number): Promise<EchoServer> {
  try {
    return await start(port);
  } catch {
    return start(0);
  }
}

async function secretPem(namespace: string, name: string): Promise<{ cert: string; key: string } | null> {
  const r = await kubectl(['get', 'secret', '-n', namespace, name, '-o', 'json']);
  if (r.code !== 0) return null;
  const data = (JSON.parse(r.stdout) as { data?: Record<string, string> }).data ?? {};
  if (!data['tls.crt'] || !data['tls.key']) return null;
  const pem = (b64: string) => Buffer.from(b64, 'base64').toString('utf8');
  return { cert: pem(data['tls.crt']), key: pem(data['tls.key']) };
}

/** The TLS Secrets (and CA ConfigMap) the upstream suite's setup makes, signed by a fresh CA. */
async function applySuiteSecrets(): Promise<string> {
  const pki = makePki();
  try {
    const secrets: Array<[string, string, string[]]> = [
      ['gateway-conformance-web-backend', 'certificate', ['*']],
      ['gateway-conformance-infra', 'tls-validity-checks-certificate', ['*', '*.org']],
      ['gateway-conformance-infra', 'tls-passthrough-checks-certificate', ['abc.example.com']],
      ['gateway-conformance-app-backend', 'tls-passthrough-checks-certificate', ['abc.example.com']],
      ['gateway-conformance-infra', 'tls-checks-certificate', ['abc.example.com']],
    ];
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    const objects: KubeObject[] = secrets.map(([namespace, name, dns]) => {
      const leaf = pki.leaf(`${namespace}-${name}`, dns);
      return {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name, namespace },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': b64(leaf.cert), 'tls.key': b64(leaf.key) },
      };
    });
    objects.push({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'tls-checks-ca-certificate', namespace: 'gateway-conformance-infra' },
      data: { 'ca.crt': pki.ca },
    });
    await applyObjects(objects);
    return pki.ca;
  } finally {
    pki.remove();
  }
}

/**
 * Installs the Gateway API CRDs of the channel (if needed), applies base/manifests.yaml with `p`'s placeholders
 * (all but its Deployments) and the suite's TLS Secrets, runs the Deployments' pods here and
 * writes the Services' EndpointSlices.
 */
export async function startConformanceBackends(o: BackendsOptions): Promise<Backends> {
  await installGatewayApiCrds(o.channel);
  const base = readConformance('base/manifests.yaml', o);
  await applyObjects(base.filter((x) => !RUN_IN_PROCESS.has(x.kind)));
  const ca = await applySuiteSecrets();
  const backends = newBackends(o.addressPrefix ?? '127.0.3', ca);
  await backends.add(base);
  return backends;
}

function newBackends(prefix: string, ca: string): Backends {
  const pods: Pod[] = [];
  const skipped: Backends['skipped'] = [];
  const services = new Map<string, KubeObject>();
  /** Service key → names of the EndpointSlices written for it. */
  const slices = new Map<string, string[]>();

  const selectorOf = (svc: KubeObject) =>
    (svc.spec as { selector?: Record<string, string> } | undefined)?.selector;
  const portsOf = (svc: KubeObject) => ((svc.spec as { ports?: ServicePort[] }).ports ?? []) as ServicePort[];
  const podsOf = (namespace: string, service: string): Pod[] => {
    const svc = services.get(key(namespace, service));
    const selector = svc && selectorOf(svc);
    if (!selector) return [];
    return pods.filter((p) => p.namespace === namespace && selects(selector, p.labels));
  };

  async function startPods(d: KubeObject): Promise<Pod[]> {
    const namespace = d.metadata.namespace ?? 'default';
    const deployment = d.metadata.name;
    const spec = d.spec as { replicas?: number; template?: PodTemplate };
    const template = spec.template ?? {};
    const c = template.spec?.containers?.[0] ?? {};
    const env = new Map((c.env ?? []).map((e) => [e.name, e.value ?? '']));
    const skip = (reason: string) => skipped.push({ namespace, deployment, reason });
    if (!c.image?.includes('/gateway-api/echo-basic')) {
      skip(`image ${c.image} is not echo-basic`);
      return [];
    }
    for (const mode of ['TCP_ECHO_SERVER', 'UDP_ECHO_SERVER'])
      if (env.has(mode)) {
        skip(`${mode}: no TCP/UDP echo here`);
        return [];
      }
    const grpc = env.has('GRPC_ECHO_SERVER');
    const httpPort = Number(env.get('HTTP_PORT') || 3000);
    const h2cPort = Number(env.get('H2C_PORT') || 3001);
    const httpsPort = Number(env.get('HTTPS_PORT') || 8443);
    let tls: { cert: string; key: string } | null = null;
    if (!grpc && env.get('TLS_SERVER_CERT')) {
      const mounted = new Set((c.volumeMounts ?? []).map((m) => m.name));
      const secret = template.spec?.volumes?.find((v) => v.secret && mounted.has(v.name))?.secret?.secretName;
      tls = secret ? await secretPem(namespace, secret) : null;
      if (!tls)
        skip(`port ${httpsPort} (https): Secret ${namespace}/${secret} with tls.crt and tls.key not found`);
    }
    const out: Pod[] = [];
    for (let n = 1; n <= (spec.replicas ?? 1); n++) {
      const pod: Pod = {
        namespace,
        name: `${deployment}-${n}`,
        deployment,
        address: allocate(prefix),
        labels: template.metadata?.labels ?? {},
        ports: new Map(),
        servers: [],
      };
      const who = { host: pod.address, namespace, pod: pod.name };
      const serve = async (port: number, start: (port: number) => Promise<EchoServer>) => {
        if (pod.ports.has(port)) return;
        const s = await listen(start, port);
        pod.ports.set(port, s.port);
        pod.servers.push(s);
      };
      if (grpc) await serve(httpPort, (port) => startGrpcEcho({ ...who, port }));
      else {
        await serve(httpPort, (port) => startEcho({ ...who, port }));
        await serve(h2cPort, (port) => startEcho({ ...who, port, h2cOnly: true }));
        const cert = tls;
        if (cert) await serve(httpsPort, (port) => startEcho({ ...who, port, tls: cert }));
        for (const p of c.ports ?? []) await serve(p.containerPort, (port) => startEcho({ ...who, port }));
      }
      pods.push(pod);
      out.push(pod);
    }
    return out;
  }

  /** The EndpointSlices of a Service with a selector: one per set of pods serving the same ports. */
  function slicesFor(svc: KubeObject): KubeObject[] {
    const namespace = svc.metadata.namespace ?? 'default';
    const name = svc.metadata.name;
    const ports = portsOf(svc);
    const groups = new Map<string, { ports: object[]; pods: Pod[] }>();
    const selected = podsOf(namespace, name);
    const portsFor = (pod?: Pod) =>
      ports
        .map((sp) => {
          const target = sp.targetPort ?? sp.port;
          // echo-basic names no ports: a named targetPort matches nothing, as in a cluster.
          if (typeof target !== 'number') return null;
          return {
            name: sp.name ?? '',
            port: pod?.ports.get(target) ?? target,
            protocol: sp.protocol ?? 'TCP',
            ...(sp.appProtocol ? { appProtocol: sp.appProtocol } : {}),
          };
        })
        .filter((p) => p !== null);
    for (const pod of selected) {
      const pp = portsFor(pod);
      const k = JSON.stringify(pp);
      if (!groups.has(k)) groups.set(k, { ports: pp, pods: [] });
      groups.get(k)?.pods.push(pod);
    }
    // A Service selecting no pod has one slice with no endpoints, as the controller writes it.
    if (groups.size === 0) groups.set('', { ports: portsFor(), pods: [] });
    return [...groups.values()].map((g, i) => ({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: `${name}-harness-${i + 1}`,
        namespace,
        labels: {
          'kubernetes.io/service-name': name,
          'endpointslice.kubernetes.io/managed-by': MANAGED_BY,
        },
      },
      addressType: 'IPv4',
      ports: g.ports,
      endpoints: g.pods.map((p) => ({
        addresses: [p.address],
        conditions: { ready: true, serving: true, terminating: false },
        targetRef: { kind: 'Pod', namespace, name: p.name },
      })),
    }));
  }

  async function deleteSlices(namespace: string, names: string[]): Promise<void> {
    if (names.length > 0)
      await ok(['delete', 'endpointslice', '-n', namespace, '--ignore-not-found', ...names]);
  }

  /** Writes the slices of these Services, and deletes the ones of theirs no longer needed. */
  async function writeSlices(keys: Iterable<string>): Promise<void> {
    const objects: KubeObject[] = [];
    const stale: Array<[string, string[]]> = [];
    for (const k of keys) {
      const svc = services.get(k);
      if (!svc || !selectorOf(svc)) continue;
      const mine = slicesFor(svc);
      const names = mine.map((s) => s.metadata.name);
      stale.push([
        svc.metadata.namespace ?? 'default',
        (slices.get(k) ?? []).filter((n) => !names.includes(n)),
      ]);
      slices.set(k, names);
      objects.push(...mine);
    }
    await applyObjects(objects);
    for (const [namespace, names] of stale) await deleteSlices(namespace, names);
  }

  async function stopPods(gone: Pod[]): Promise<void> {
    await Promise.all(gone.flatMap((p) => p.servers.map((s) => s.close())));
    for (const p of gone) {
      inUse.delete(p.address);
      pods.splice(pods.indexOf(p), 1);
    }
  }

  const servicesSelecting = (some: Pod[]) =>
    [...services.entries()]
      .filter(([, svc]) => {
        const selector = selectorOf(svc);
        return (
          selector !== undefined &&
          some.some((p) => p.namespace === svc.metadata.namespace && selects(selector, p.labels))
        );
      })
      .map(([k]) => k);

  return {
    pods,
    skipped,
    ca,
    podsOf,
    endpoints(namespace, service, port) {
      const svc = services.get(key(namespace, service));
      if (!svc) throw new Error(`Service ${namespace}/${service} is not one of the back ends' Services`);
      const sp = portsOf(svc).find((p) => port === undefined || p.port === port || p.name === port);
      if (!sp) throw new Error(`Service ${namespace}/${service} has no port ${port}`);
      const target = sp.targetPort ?? sp.port;
      if (typeof target !== 'number') return [];
      return podsOf(namespace, service).map((p) => ({
        namespace,
        pod: p.name,
        address: p.address,
        port: p.ports.get(target) ?? target,
      }));
    },
    requests(namespace, service) {
      const of =
        service === undefined ? pods.filter((p) => p.namespace === namespace) : podsOf(namespace, service);
      return of.flatMap((p) => p.servers.flatMap((s) => s.requests));
    },
    async add(objects) {
      const started: Started = { pods: [], services: [] };
      for (const o of objects) {
        if (o.kind !== 'Service') continue;
        const k = key(o.metadata.namespace ?? 'default', o.metadata.name);
        services.set(k, o);
        started.services.push(k);
      }
      for (const o of objects) if (o.kind === 'Deployment') started.pods.push(...(await startPods(o)));
      await writeSlices(new Set([...started.services, ...servicesSelecting(started.pods)]));
      return started;
    },
    async remove(started) {
      const touched = servicesSelecting(started.pods).filter((k) => !started.services.includes(k));
      await stopPods(started.pods);
      for (const k of started.services) {
        const [namespace] = k.split('/');
        await deleteSlices(namespace, slices.get(k) ?? []);
        slices.delete(k);
        services.delete(k);
      }
      await writeSlices(touched);
    },
    async stop() {
      await stopPods([...pods]);
      const written = [...slices.entries()].flatMap(([k, names]) =>
        names.map((name) => ({
          apiVersion: 'discovery.k8s.io/v1',
          kind: 'EndpointSlice',
          metadata: { name, namespace: k.split('/')[0] },
        })),
      );
      slices.clear();
      await deleteObjects(written);
    },
  };
}
