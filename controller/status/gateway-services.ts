/**
 * Each Gateway's own Service (its address), written by the leader from what the last build
 * wants (controller/gateway-api/index.ts: GatewayService): created when missing, updated (PUT
 * with its resourceVersion) when what the controller owns differs, deleted when its Gateway is
 * no longer served. Only what differs is written: a controller with nothing to change sends
 * nothing (the comparison is with the Services informer's cache, never a poll).
 *
 * What the controller owns on the Service: its ports (one per listener port, targetPort the
 * data-plane port allocated to it), selector (the data-plane pods), type (its class's serviceType
 * parameter, else the controller's default), labels and annotations (its class's parameters',
 * spec.infrastructure's and the gateway-name label: exactly those) and its controller
 * ownerReference to the Gateway. The rest is the API server's and stays: clusterIP(s), node
 * ports, ipFamilies, status. The ownerReference lets a cluster's garbage collector delete the
 * Service with its Gateway; the controller deletes it too (an API server without one, and a
 * Gateway that stays but leaves Sluice's classes).
 *
 * Each Service carries the controllerName of the installation that made it (annotation
 * sluice.dev/gateway-controller-name; none: the default name, as Services made before it
 * existed): an installation deletes only its own, so two installations with different
 * controllerNames in one namespace never delete each other's Services. A Gateway moved to
 * another installation's class has its Service taken over (updated) by that one.
 */
import {
  GATEWAY_API_GROUP,
  GATEWAY_CONTROLLER_NAME,
  GATEWAY_NAME_LABEL,
  type GatewayServiceType,
} from '../api/gateway-api.ts';
import type { OwnerReference, Service, ServicePort } from '../api/service.ts';
import type { GatewayService } from '../gateway-api/index.ts';
import { gatewayServiceName } from '../gateway-api/gateways.ts';
import type { ChangeType, KubeObject } from '../source/informers.ts';
import type { Kube } from '../source/kube.ts';
import type { ReadCache } from '../source/watched.ts';
import { newer } from './status-writer.ts';
import { WriteQueue } from './write-queue.ts';

/** The controllerName of the installation that made a Gateway's Service. */
export const CONTROLLER_NAME_ANNOTATION = 'sluice.dev/gateway-controller-name';

export interface GatewayServiceOptions {
  /** The GatewayClass controllerName served (default sluice.dev/gateway-controller). */
  controllerName?: string;
  /** The data-plane pods' labels; empty: a Service without a selector. */
  selector: Readonly<Record<string, string>>;
  /** The type of a Service whose class's parameters name none. */
  type: GatewayServiceType;
}

type Cached = Service & KubeObject;

/** The controller ownerReference of a Gateway's Service. */
export function gatewayOwner(want: GatewayService): OwnerReference {
  return {
    apiVersion: `${GATEWAY_API_GROUP}/v1`,
    kind: 'Gateway',
    name: want.gateway.name,
    uid: want.gateway.uid!,
    controller: true,
    blockOwnerDeletion: true,
  };
}

function portsOf(want: GatewayService, keep: readonly ServicePort[] = [], type: GatewayServiceType) {
  return want.ports.map(({ port, targetPort }): ServicePort => {
    // A node port the API server allocated stays with its port (NodePort and LoadBalancer).
    const nodePort = type === 'ClusterIP' ? undefined : keep.find((p) => p.port === port)?.nodePort;
    return {
      name: `listener-${port}`,
      port,
      targetPort,
      protocol: 'TCP',
      ...(nodePort !== undefined && { nodePort }),
    };
  });
}

/**
 * The externalTrafficPolicy the controller owns: its class's, else Cluster (the API server's
 * default), for NodePort and LoadBalancer; a ClusterIP Service has none.
 */
function trafficPolicyOf(want: GatewayService, type: GatewayServiceType): string | undefined {
  return type === 'ClusterIP' ? undefined : (want.externalTrafficPolicy ?? 'Cluster');
}

/** The annotations the controller owns: the wanted ones and its controllerName. */
function annotationsOf(want: GatewayService, o: GatewayServiceOptions): Record<string, string> {
  return { ...want.annotations, [CONTROLLER_NAME_ANNOTATION]: o.controllerName ?? GATEWAY_CONTROLLER_NAME };
}

/** The Service to create for a Gateway. */
export function newService(want: GatewayService, o: GatewayServiceOptions): Service {
  const type = want.type ?? o.type;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: want.name,
      namespace: want.namespace,
      labels: { ...want.labels },
      annotations: annotationsOf(want, o),
      ownerReferences: [gatewayOwner(want)],
    },
    spec: {
      type,
      ...(Object.keys(o.selector).length > 0 && { selector: { ...o.selector } }),
      ports: portsOf(want, [], type),
      ...(type !== 'ClusterIP' && { externalTrafficPolicy: trafficPolicyOf(want, type) }),
    },
  };
}

/**
 * The Service to PUT: the current one with what the controller owns as wanted, everything else
 * as the API server has it; null when it already is as wanted.
 */
export function updatedService(
  current: Service,
  want: GatewayService,
  o: GatewayServiceOptions,
): Service | null {
  const type = want.type ?? o.type;
  const annotations = annotationsOf(want, o);
  const policy = trafficPolicyOf(want, type);
  const owner = gatewayOwner(want);
  const owners = current.metadata.ownerReferences ?? [];
  const spec = current.spec ?? {};
  const same =
    (spec.type ?? 'ClusterIP') === type &&
    (policy === undefined || spec.externalTrafficPolicy === policy) &&
    sameRecord(spec.selector, o.selector) &&
    sameRecord(current.metadata.labels, want.labels) &&
    sameRecord(current.metadata.annotations, annotations) &&
    owners.some((r) => sameOwner(r, owner)) &&
    (spec.ports ?? []).length === want.ports.length &&
    want.ports.every((w, i) => {
      const p = spec.ports![i];
      return (
        p.name === `listener-${w.port}` &&
        p.port === w.port &&
        p.targetPort === w.targetPort &&
        (p.protocol ?? 'TCP') === 'TCP'
      );
    });
  if (same) return null;
  // The policy and its health-check node port go with a type or policy that has none (the API
  // server refuses them there); a Local one keeps the port it allocated.
  const { selector: _selector, externalTrafficPolicy: _policy, healthCheckNodePort, ...rest } = spec;
  const { annotations: _annotations, ...meta } = current.metadata;
  return {
    ...current,
    metadata: {
      ...meta,
      labels: { ...want.labels },
      annotations,
      // Others' (non-controller) references stay; the controller reference is the Gateway's.
      ownerReferences: [...owners.filter((r) => !r.controller && r.uid !== owner.uid), owner],
    },
    spec: {
      ...rest,
      type,
      ...(Object.keys(o.selector).length > 0 && { selector: { ...o.selector } }),
      ports: portsOf(want, spec.ports, type),
      ...(policy !== undefined && { externalTrafficPolicy: policy }),
      ...(policy === 'Local' &&
        type === 'LoadBalancer' &&
        healthCheckNodePort !== undefined && { healthCheckNodePort }),
    },
  };
}

/**
 * Whether a Service is one this installation (`controllerName`) made for a Gateway: the
 * gateway-name label, the name it gives such Services, a controller reference to that Gateway,
 * and its controllerName annotation. Other controllers label their Gateways' Services with
 * gateway-name too (Istio does), and another installation makes the same names: theirs are
 * never deleted.
 */
export function isGatewayService(s: Service, controllerName: string = GATEWAY_CONTROLLER_NAME): boolean {
  const gateway = s.metadata.labels?.[GATEWAY_NAME_LABEL];
  return (
    gateway !== undefined &&
    (s.metadata.annotations?.[CONTROLLER_NAME_ANNOTATION] ?? GATEWAY_CONTROLLER_NAME) === controllerName &&
    s.metadata.name === gatewayServiceName(gateway) &&
    (s.metadata.ownerReferences ?? []).some(
      (r) =>
        r.controller === true &&
        r.kind === 'Gateway' &&
        r.apiVersion.startsWith(`${GATEWAY_API_GROUP}/`) &&
        r.name === gateway,
    )
  );
}

function sameOwner(a: OwnerReference, b: OwnerReference): boolean {
  return (
    a.apiVersion === b.apiVersion &&
    a.kind === b.kind &&
    a.name === b.name &&
    a.uid === b.uid &&
    a.controller === b.controller &&
    a.blockOwnerDeletion === b.blockOwnerDeletion
  );
}

function sameRecord(
  a: Readonly<Record<string, string>> | undefined,
  b: Readonly<Record<string, string>>,
): boolean {
  const ka = Object.keys(a ?? {});
  return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && a![k] === b[k]);
}

const keyOf = (namespace: string, name: string) => `${namespace}/${name}`;

/** The writes, leader only. */
export class GatewayServices {
  readonly #kube: Kube;
  readonly #cache: ReadCache<Cached>;
  readonly #o: GatewayServiceOptions;
  readonly #onWrite: (verb: 'create' | 'update' | 'delete', ok: boolean, key: string) => void;
  readonly #queue = new WriteQueue();
  /** By "namespace/name": the Services the last build wants (with no ports: left as they are). */
  #wanted = new Map<string, GatewayService>();
  /** Whether that build had every Gateway listed (else none is deleted). */
  #complete = false;
  /**
   * What this writer last wrote per Service, until the informer shows it (null: deleted). The
   * cache lags behind our own writes: without this, a build in between would create a Service
   * again (409) or update it from a stale resourceVersion (409).
   */
  readonly #mine = new Map<
    string,
    { resourceVersion: string; uid: string | undefined; service: Cached | null }
  >();
  /**
   * Per Service with a write under way: the resourceVersion of a deletion the informer showed
   * meanwhile (null: none). The watch may show our write and then someone's delete before our
   * write's answer comes: remembered as ours then, the deleted Service would pass for current.
   */
  readonly #flying = new Map<string, string | null>();

  constructor(
    kube: Kube,
    cache: ReadCache<Cached>,
    o: GatewayServiceOptions,
    onWrite: (verb: 'create' | 'update' | 'delete', ok: boolean, key: string) => void = () => {},
  ) {
    this.#kube = kube;
    this.#cache = cache;
    this.#o = o;
    this.#onWrite = onWrite;
  }

  setActive(active: boolean): void {
    this.#queue.setActive(active);
    if (active) this.#reconcile();
  }

  /** The Services the last build wants; `complete`: it had every Gateway (else none is deleted). */
  want(services: readonly GatewayService[], complete: boolean): void {
    this.#wanted = new Map(services.map((s) => [keyOf(s.namespace, s.name), s]));
    this.#complete = complete;
    this.#reconcile();
  }

  /** An informer event of a Service: once it shows our write (or the Service goes), the cache is current again. */
  observed(type: ChangeType, obj: KubeObject): void {
    const key = keyOf(obj.metadata.namespace ?? '', obj.metadata.name);
    if (type === 'deleted' && this.#flying.has(key))
      this.#flying.set(key, obj.metadata.resourceVersion ?? '');
    const mine = this.#mine.get(key);
    if (mine === undefined) return;
    const uid = (obj.metadata as { uid?: string }).uid;
    const shown =
      type === 'deleted' ||
      (mine.service === null
        ? uid !== mine.uid
        : !newer(mine.resourceVersion, obj.metadata.resourceVersion ?? ''));
    if (shown) this.#mine.delete(key);
  }

  #reconcile(): void {
    for (const key of this.#wanted.keys()) this.#queue.want(key, () => this.#write(key));
    if (!this.#complete) return;
    for (const s of this.#cache.values()) {
      const key = keyOf(s.metadata.namespace ?? '', s.metadata.name);
      if (!this.#wanted.has(key) && isGatewayService(s, this.#o.controllerName))
        this.#queue.want(key, () => this.#write(key));
    }
  }

  /** The Service as it is now: the cache, or our own write the cache does not show yet. */
  #current(key: string): Cached | undefined {
    const cached = this.#cache.get(key);
    const mine = this.#mine.get(key);
    if (mine === undefined) return cached;
    if (cached !== undefined && newer(cached.metadata.resourceVersion, mine.resourceVersion)) {
      this.#mine.delete(key);
      return cached;
    }
    // Deleted by us and still cached: gone, unless what is cached is a new one of the same name.
    if (mine.service === null) return cached?.metadata.uid === mine.uid ? undefined : cached;
    return mine.service;
  }

  #write(key: string): Promise<'done' | 'retry'> | null {
    const want = this.#wanted.get(key);
    const current = this.#current(key);
    const [namespace, name] = key.split('/');
    const base = `/api/v1/namespaces/${namespace}/services`;
    if (want === undefined) {
      // Not wanted (any more): deleted only when it is ours and the build saw every Gateway.
      if (current === undefined || !this.#complete || !isGatewayService(current, this.#o.controllerName))
        return null;
      const { uid, resourceVersion } = current.metadata;
      return this.#send('delete', key, 'DELETE', `${base}/${name}`, {
        kind: 'DeleteOptions',
        apiVersion: 'v1',
        // Only the Service as looked at: not one made meanwhile under the same name, nor this one
        // since taken over by the installation its Gateway moved to.
        ...(uid && { preconditions: { uid, ...(resourceVersion && { resourceVersion }) } }),
      }).then((r) => {
        if (r.ok || r.status === 404) this.#mine.set(key, { resourceVersion: '', uid, service: null });
        // A conflict: it changed since it was looked at; looked at again (taken over: left alone).
        return r.ok || r.status === 404 ? 'done' : 'retry';
      });
    }
    // No listener port (no listener Sluice can serve) or no uid to own it by: nothing to make.
    if (want.ports.length === 0 || want.gateway.uid === undefined) return null;
    if (current === undefined)
      return this.#send('create', key, 'POST', base, newService(want, this.#o)).then((r) =>
        r.ok ? 'done' : 'retry',
      );
    const next = updatedService(current, want, this.#o);
    if (next === null) return null;
    return this.#send('update', key, 'PUT', `${base}/${name}`, next).then((r) => (r.ok ? 'done' : 'retry'));
  }

  async #send(
    verb: 'create' | 'update' | 'delete',
    key: string,
    method: string,
    path: string,
    body: unknown,
  ): Promise<{ ok: boolean; status?: number }> {
    this.#flying.set(key, null);
    try {
      const written = await this.#kube.request<Cached | undefined>(method, path, body);
      this.#onWrite(verb, true, key);
      const rv = written?.metadata?.resourceVersion;
      const deleted = this.#flying.get(key);
      // Deleted after our write (a deletion's version is newer): the cache, empty, is current.
      const gone = deleted != null && (deleted === '' || !newer(rv, deleted));
      if (verb !== 'delete' && written && rv && !gone)
        this.#mine.set(key, { resourceVersion: rv, uid: written.metadata.uid, service: written });
      return { ok: true };
    } catch (err) {
      this.#onWrite(verb, false, key);
      return { ok: false, status: (err as { status?: number }).status };
    } finally {
      this.#flying.delete(key);
    }
  }
}
