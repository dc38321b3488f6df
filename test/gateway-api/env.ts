/**
 * The world a conformance test runs in, on kapi (KUBECONFIG): the upstream Gateway API CRDs and
 * Sluice's, the suite's base objects and back ends (echo pods on 127.0.3.N behind EndpointSlices,
 * test/helpers/gateway-api/backends.ts), a GatewayClass of Sluice's controller, two data planes
 * on 127.0.1.1 and 127.0.1.2 (two pod IPs; the same admin port, as pods have), and a controller
 * watching every namespace. A client reaches a Gateway listener at each data plane's address on
 * the targetPort the controller put in that Gateway's Service (no kube-proxy here).
 */
import { randomUUID } from 'node:crypto';
import type { PeerCertificate } from 'node:tls';
import pino from 'pino';
import { expect } from 'vitest';
import { type Controller, type ControllerOptions, startController } from '../../controller/main.ts';
import { gatewayServiceName } from '../../controller/gateway-api/gateways.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { startDataPlanesIn } from '../helpers/controller-on-kapi.ts';
import { type Backends, startConformanceBackends } from '../helpers/gateway-api/backends.ts';
import { http1, type Reply, type RequestOptions } from '../helpers/gateway-api/clients.ts';
import { type Channel, installGatewayApiCrds } from '../helpers/gateway-api/crds.ts';
import {
  applyConformanceTest,
  applyGatewayClass,
  type Placeholders,
} from '../helpers/gateway-api/manifests.ts';
import { kubectl, ok } from '../helpers/kubectl.ts';
import { waitFor } from '../helpers/until.ts';

export const PLANES = ['127.0.1.1', '127.0.1.2'] as const;
export const INFRA = 'gateway-conformance-infra';

export interface Env {
  placeholders: Placeholders;
  backends: Backends;
  planes: DataPlane[];
  controller: Controller;
  /** The base URL of a Gateway listener port on each data plane (http or https). */
  gatewayUrls(namespace: string, gateway: string, port: number, scheme?: 'http' | 'https'): Promise<string[]>;
  /** A JSON object as the API server has it. */
  get<T>(kind: string, namespace: string | null, name: string): Promise<T | null>;
  /** Applies conformance test file tests/<name>.yaml (its back ends run) for the time `body` takes. */
  withManifest(name: string, body: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Where a run's processes listen: its data planes' addresses, the first three octets of its back
 * ends'; and the channel of the Gateway API CRDs it runs on (default standard).
 */
export interface EnvAddresses {
  planes?: readonly string[];
  backendPrefix?: string;
  channel?: Channel;
}

export async function startEnv(
  extra: Partial<ControllerOptions> = {},
  where: EnvAddresses = {},
): Promise<Env> {
  const addresses = where.planes ?? PLANES;
  const placeholders = {
    gatewayClassName: 'sluice-conformance',
    controllerName: 'sluice.dev/gateway-controller',
  };
  await installGatewayApiCrds(where.channel);
  await ok(['apply', '--server-side', '--force-conflicts', '-f', 'crds']);
  await ok(['wait', '--for=condition=Established', '--timeout=30s', 'crd/gatewayplugins.sluice.dev']);
  const system = `sluice-gwapi-${randomUUID().slice(0, 6)}`;
  await ok(['create', 'namespace', system]);
  await applyGatewayClass(placeholders);
  const backends = await startConformanceBackends({
    ...placeholders,
    ...(where.backendPrefix && { addressPrefix: where.backendPrefix }),
    ...(where.channel && { channel: where.channel }),
  });
  const planes = await startDataPlanesIn(system, addresses);
  const controller = await startController({
    log: pino({ level: 'silent' }),
    dataplaneService: `${system}/sluice-admin`,
    adminPortName: 'admin',
    adminScheme: 'http',
    adminToken: 'test-admin-token',
    metricsHost: '127.0.0.1',
    metricsPort: 0,
    leaseNamespace: system,
    leaseName: 'sluice-controller',
    leaseSeconds: 3,
    holdoffMs: 10,
    gatewayApi: true,
    ...extra,
  });
  const get = async <T>(kind: string, namespace: string | null, name: string): Promise<T | null> => {
    const args = ['get', kind, name, '-o', 'json', ...(namespace ? ['-n', namespace] : [])];
    const r = await kubectl(args);
    return r.code === 0 ? (JSON.parse(r.stdout) as T) : null;
  };
  return {
    placeholders,
    backends,
    planes,
    controller,
    get,
    async gatewayUrls(namespace, gateway, port, scheme = 'http') {
      type Svc = { spec: { ports: { port: number; targetPort: number }[] } };
      const target = await waitFor(
        `the Service of Gateway ${namespace}/${gateway} maps port ${port}`,
        async () => {
          const svc = await get<Svc>('service', namespace, gatewayServiceName(gateway));
          return svc?.spec.ports.find((p) => p.port === port)?.targetPort;
        },
        (t) => typeof t === 'number',
      );
      return addresses.map((host) => `${scheme}://${host}:${target}`);
    },
    async withManifest(name, body) {
      const applied = await applyConformanceTest(name, placeholders, backends);
      try {
        await body();
      } finally {
        await applied.delete();
      }
    },
    async stop() {
      await controller.close();
      await Promise.all(planes.map((p) => p.close()));
      await backends.stop();
    },
  };
}

/** What the upstream suite checks of a request: who answered it, and what it saw. */
export interface Expected {
  status?: number;
  /** The back end's namespace and Service name (its pods are named <service>-<n>). */
  namespace?: string;
  backend?: string;
  /** The path the back end saw (default: the request's). */
  path?: string;
  /** Headers the back end saw (name → value), or that must be absent (null). */
  headers?: Record<string, string | null>;
}

/**
 * Sends the request to every data plane until each answers as expected (routes reach the pods
 * moments after status says Accepted), then once more to be sure; returns the last replies.
 */
export async function expectRequest(
  urls: readonly string[],
  path: string,
  want: Expected,
  options: RequestOptions = {},
): Promise<Reply[]> {
  const check = (r: Reply): boolean => {
    if (r.status !== (want.status ?? 200)) return false;
    if (want.backend === undefined) return true;
    const a = r.answer;
    if (a === null) return false;
    if (want.namespace && a.namespace !== want.namespace) return false;
    if (!a.pod.startsWith(`${want.backend}-`)) return false;
    if (a.path !== (want.path ?? path)) return false;
    for (const [name, value] of Object.entries(want.headers ?? {})) {
      const seen = Object.entries(a.headers).find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1];
      if (value === null ? seen !== undefined : seen?.[0] !== value) return false;
    }
    return true;
  };
  const send = () => Promise.all(urls.map((u) => http1(`${u}${path}`, options)));
  await waitFor(`${path} answered as expected by every data plane`, send, (rs) => rs.every(check));
  const last = await send();
  for (const r of last) expect(check(r), `${path}: ${r.status} ${r.body.slice(0, 300)}`).toBe(true);
  return last;
}

/**
 * The cases of upstream's HTTPRouteRequestHeaderModifier (set, add, remove, several at once,
 * names in any case), which HTTPRouteBackendRequestHeaderModifier runs too, its filters written
 * on the backendRef: the manifests of both give each case its own path to infra-backend-v1.
 */
export async function expectRequestHeaderModifier(urls: readonly string[]): Promise<void> {
  const v1 = { namespace: INFRA, backend: 'infra-backend-v1' };
  await expectRequest(
    urls,
    '/set',
    { ...v1, headers: { 'X-Header-Set': 'set-overwrites-values' } },
    { headers: { 'Some-Other-Header': 'val', 'X-Header-Set': 'some-other-value' } },
  );
  await expectRequest(urls, '/add', { ...v1, headers: { 'X-Header-Add': 'add-appends-values' } });
  await expectRequest(
    urls,
    '/remove',
    { ...v1, headers: { 'X-Header-Remove': null } },
    { headers: { 'X-Header-Remove': 'val' } },
  );
  await expectRequest(
    urls,
    '/multiple',
    {
      ...v1,
      headers: {
        'X-Header-Set-1': 'header-set-1',
        'X-Header-Set-2': 'header-set-2',
        'X-Header-Add-1': 'header-add-1',
        'X-Header-Remove-1': null,
        'X-Header-Remove-2': null,
      },
    },
    {
      headers: { 'X-Header-Set-2': 'set-val-2', 'X-Header-Remove-1': 'val', 'X-Header-Remove-2': 'val' },
    },
  );
  await expectRequest(
    urls,
    '/case-insensitivity',
    { ...v1, headers: { 'X-Header-Set': 'header-set', 'X-Header-Remove': null } },
    { headers: { 'x-header-set': 'original-val', 'x-header-remove': 'val' } },
  );
}

interface Status {
  status?: {
    conditions?: { type: string; status: string; reason: string }[];
    parents?: {
      parentRef: { name: string; namespace?: string; sectionName?: string };
      controllerName: string;
      conditions: { type: string; status: string; reason: string }[];
    }[];
  };
}

const condition = (list: { type: string; status: string; reason: string }[] | undefined, type: string) =>
  list?.find((c) => c.type === type);

/** Waits until the Gateway is Programmed (every data plane runs it). */
export async function gatewayProgrammed(env: Env, namespace: string, name: string): Promise<void> {
  await waitFor(
    `Gateway ${namespace}/${name} Programmed`,
    () => env.get<Status>('gateway', namespace, name),
    (g) => condition(g?.status?.conditions, 'Programmed')?.status === 'True',
  );
}

/**
 * Waits until the HTTPRoute's status.parents entry of Sluice for Gateway `parent` has these
 * Accepted and ResolvedRefs (default: both True), and returns that entry's conditions.
 */
export async function routeParent(
  env: Env,
  namespace: string,
  name: string,
  parent: string,
  want: {
    accepted?: string;
    resolvedRefs?: string;
    sectionName?: string;
    kind?: 'httproute' | 'grpcroute';
  } = {},
): Promise<{ type: string; status: string; reason: string }[]> {
  const matches = (c: { type: string; status: string; reason: string } | undefined, reason = 'True') =>
    reason === 'True' ? c?.status === 'True' : c?.status === 'False' && c.reason === reason;
  const route = await waitFor(
    `${want.kind ?? 'httproute'} ${namespace}/${name} on ${parent}: Accepted ${want.accepted ?? 'True'}, ResolvedRefs ${want.resolvedRefs ?? 'True'}`,
    () => env.get<Status>(want.kind ?? 'httproute', namespace, name),
    (r) => {
      const p = r?.status?.parents?.find(
        (x) =>
          x.controllerName === env.placeholders.controllerName &&
          x.parentRef.name === parent &&
          (want.sectionName === undefined || x.parentRef.sectionName === want.sectionName),
      );
      return (
        p !== undefined &&
        matches(condition(p.conditions, 'Accepted'), want.accepted) &&
        matches(condition(p.conditions, 'ResolvedRefs'), want.resolvedRefs)
      );
    },
  );
  return route!.status!.parents!.find((x) => x.parentRef.name === parent)!.conditions;
}

/** A condition as the upstream suite expects one: a reason of undefined means any reason. */
export interface ExpectedCondition {
  type: string;
  status: 'True' | 'False';
  reason?: string;
}

/** A listener's status as the upstream suite expects it (kinds in gateway.networking.k8s.io). */
export interface ExpectedListener {
  name: string;
  /** Kinds that must be listed (others may be too); [] means the list must be empty. */
  supportedKinds: string[];
  conditions: ExpectedCondition[];
  attachedRoutes: number;
}

interface GatewayObject {
  metadata: { generation?: number };
  status?: {
    conditions?: { type: string; status: string; reason: string; observedGeneration?: number }[];
    listeners?: {
      name: string;
      supportedKinds?: { group?: string; kind: string }[];
      attachedRoutes: number;
      conditions?: { type: string; status: string; reason: string }[];
    }[];
  };
}

const hasCondition = (
  list: { type: string; status: string; reason: string }[] | undefined,
  want: ExpectedCondition,
) =>
  list?.some(
    (c) => c.type === want.type && c.status === want.status && (want.reason ?? c.reason) === c.reason,
  ) ?? false;

/**
 * Waits until the Gateway's status.listeners are exactly these (by name, in any order): each
 * with its supportedKinds, conditions and attachedRoutes, as upstream's listener check compares.
 */
export async function gatewayListeners(
  env: Env,
  namespace: string,
  name: string,
  want: readonly ExpectedListener[],
): Promise<void> {
  const matches = (g: GatewayObject | null): boolean => {
    const actual = g?.status?.listeners ?? [];
    if (actual.length !== want.length) return false;
    return want.every((w) => {
      const a = actual.find((l) => l.name === w.name);
      if (a === undefined || a.attachedRoutes !== w.attachedRoutes) return false;
      const kinds = a.supportedKinds ?? [];
      if (w.supportedKinds.length === 0 && kinds.length !== 0) return false;
      const listed = (k: string) =>
        kinds.some(
          (s) => s.kind === k && (s.group ?? 'gateway.networking.k8s.io') === 'gateway.networking.k8s.io',
        );
      return w.supportedKinds.every(listed) && w.conditions.every((c) => hasCondition(a.conditions, c));
    });
  };
  await waitFor(
    `Gateway ${namespace}/${name} listeners ${JSON.stringify(want)}`,
    () => env.get<GatewayObject>('gateway', namespace, name),
    matches,
  );
}

/**
 * Waits until the Gateway has this condition and every one of its conditions observed its
 * latest generation (upstream's GatewayMustHaveLatestConditions and GatewayMustHaveCondition);
 * returns the Gateway's generation.
 */
export async function gatewayCondition(
  env: Env,
  namespace: string,
  name: string,
  want: ExpectedCondition,
): Promise<number> {
  const g = await waitFor(
    `Gateway ${namespace}/${name} ${want.type} ${want.status}${want.reason ? ` ${want.reason}` : ''}, all conditions of its generation`,
    () => env.get<GatewayObject>('gateway', namespace, name),
    (x) => {
      const conditions = x?.status?.conditions ?? [];
      return (
        conditions.length > 0 &&
        conditions.every((c) => c.observedGeneration === x?.metadata.generation) &&
        hasCondition(conditions, want)
      );
    },
  );
  return g!.metadata.generation ?? 0;
}

/**
 * The name check of Go's TLS client, which the upstream suite's requests make: a wildcard is the
 * whole leftmost label and stands for one label, *.org included (Node refuses a wildcard over a
 * top-level domain, and the suite's certificate names only * and *.org).
 */
export function goNameCheck(host: string, cert: PeerCertificate): Error | undefined {
  const names = (cert.subjectaltname ?? '')
    .split(', ')
    .filter((n) => n.startsWith('DNS:'))
    .map((n) => n.slice(4).toLowerCase().split('.'));
  const labels = host.toLowerCase().split('.');
  const matches = (p: string[]) =>
    p.length === labels.length && p.every((x, i) => x === labels[i] || (i === 0 && x === '*'));
  return names.some(matches)
    ? undefined
    : new Error(`${host} is not a name of the certificate (${cert.subjectaltname})`);
}
