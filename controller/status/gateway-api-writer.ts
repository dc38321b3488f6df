/**
 * The leader's writes for the Gateway API: the status of GatewayClasses (merge patch), Gateways
 * (merge patch of conditions, listeners and addresses) and HTTPRoutes (PUT of status.parents
 * with the object's resourceVersion, since a merge patch would replace other controllers'
 * entries too; a 409 is retried from the informer cache), and each Gateway's Service
 * (gateway-services.ts). Only what differs is written, a few writes at a time (write-queue.ts).
 *
 * A Gateway is Programmed when every data-plane pod runs a snapshot built from its generation:
 * the same judgement as a GatewayRoute's (conditions.ts programmed()), with a ledger of its own
 * keyed "Gateway/namespace/name".
 *
 * Each write's condition changes on GatewayClasses, Gateways, HTTPRoutes and GRPCRoutes become
 * Events (events.ts: Warning for faults, Normal for progress, aggregated and rate limited per
 * object); a GatewayClass's, cluster-scoped, in the controller's own namespace.
 */
import type { Condition } from '../api/common.ts';
import type { Service } from '../api/service.ts';
import type { BuildResult } from '../build.ts';
import { gatewayServiceName } from '../gateway-api/gateways.ts';
import type { GatewayApiSource } from '../source/gateway-api-source.ts';
import type { ChangeType, KubeObject } from '../source/informers.ts';
import type { Kube } from '../source/kube.ts';
import type { ReadCache } from '../source/watched.ts';
import { type PodView, programmed } from './conditions.ts';
import { EventRecorder, type Transition } from './events.ts';
import {
  classTransitions,
  gatewayAddresses,
  gatewayTransitions,
  nextClassStatus,
  nextGatewayStatus,
  nextRouteParents,
  type RouteParentStatusOut,
  routeTransitions,
  wantedGateway,
} from './gateway-api-status.ts';
import { type GatewayServiceOptions, GatewayServices } from './gateway-services.ts';
import { GenerationLedger } from './generation-ledger.ts';
import { GATEWAY_CONTROLLER_NAME } from '../api/gateway-api.ts';
import { newer } from './status-writer.ts';
import { WriteQueue } from './write-queue.ts';

type GatewayApi = BuildResult['gatewayApi'];

interface Current extends KubeObject {
  metadata: KubeObject['metadata'] & { uid?: string };
  spec?: unknown;
  status?: {
    conditions?: Condition[];
    parents?: RouteParentStatusOut[];
    [field: string]: unknown;
  };
}

export interface GatewayApiWriterOptions {
  kube: Kube;
  source: GatewayApiSource;
  /** The Services informer's cache (the watched namespaces). */
  services: ReadCache<Service & KubeObject>;
  service: GatewayServiceOptions;
  /** Where Events on GatewayClasses (cluster-scoped) are written: the controller's own namespace; absent, none are. */
  eventsNamespace?: string;
  /** The GatewayClass controllerName served (default sluice.dev/gateway-controller): only route parents of this name are ours to write. */
  controllerName?: string;
  now?: () => Date;
  /** A status write, by result (sluice_controller_status_writes_total). */
  onStatusWrite?: (ok: boolean, key: string, status: unknown) => void;
  onServiceWrite?: (verb: 'create' | 'update' | 'delete', ok: boolean, key: string) => void;
}

const STATUS_PATH: Record<string, (ns: string, name: string) => string> = {
  GatewayClass: (_ns, name) => `/apis/gateway.networking.k8s.io/v1/gatewayclasses/${name}/status`,
  Gateway: (ns, name) => `/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/gateways/${name}/status`,
  HTTPRoute: (ns, name) => `/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/httproutes/${name}/status`,
  GRPCRoute: (ns, name) => `/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/grpcroutes/${name}/status`,
};

export class GatewayApiWriter {
  readonly #o: GatewayApiWriterOptions;
  readonly #now: () => Date;
  readonly #queue = new WriteQueue();
  readonly #ledger = new GenerationLedger();
  readonly #services: GatewayServices;
  readonly #events: EventRecorder;
  /** The last build's hash and Gateway API part. */
  #last: { hash: string; gatewayApi: GatewayApi } | null = null;
  /** What this writer last wrote per object (see StatusWriter: the cache lags behind our own writes). */
  readonly #written = new Map<string, { resourceVersion: string; status: object }>();

  constructor(o: GatewayApiWriterOptions) {
    this.#o = o;
    this.#now = o.now ?? (() => new Date());
    this.#services = new GatewayServices(o.kube, o.services, o.service, o.onServiceWrite);
    this.#events = new EventRecorder(o.kube, this.#now);
  }

  setActive(active: boolean): void {
    this.#queue.setActive(active);
    this.#services.setActive(active);
  }

  /**
   * A build: its Gateways' generations go to the ledger, its Services are made as wanted.
   * `listed`: every Gateway API object was listed when it was built (else no Service is deleted).
   */
  built(hash: string, gatewayApi: GatewayApi, listed: boolean): void {
    this.#last = { hash, gatewayApi };
    const status = Object.fromEntries(
      [...gatewayApi.status.gateways].map(([key, st]) => [`Gateway/${key}`, st] as const),
    );
    this.#ledger.record({ hash, status });
    this.#services.want(gatewayApi.services, listed);
  }

  /** An event of the Services informer (our own writes showing up). */
  serviceObserved(type: ChangeType, obj: KubeObject): void {
    this.#services.observed(type, obj);
  }

  /** The status every object should show, now that the pods are known (`withheld`: why the snapshot is not pushed). */
  update(pods: readonly PodView[], withheld: string | null): void {
    const last = this.#last;
    if (last === null) return;
    const { status } = last.gatewayApi;
    const now = () => this.#now();
    for (const [name, st] of status.classes)
      this.#want(`GatewayClass//${name}`, (current) => {
        const next = nextClassStatus(current.status, st, now());
        return next && { status: next, events: classTransitions(current.status, next) };
      });
    for (const [key, st] of status.gateways) {
      const [ns, name] = key.split('/');
      const statusKey = `Gateway/${key}`;
      this.#want(statusKey, (current) => {
        const written = current.status?.conditions?.find((c) => c.type === 'Programmed');
        const p = programmed(statusKey, st, last.hash, pods, this.#ledger.generations, written, withheld);
        const service = this.#o.services.get(`${ns}/${gatewayServiceName(name)}`);
        const next = nextGatewayStatus(
          current.status,
          wantedGateway(st, p, gatewayAddresses(service)),
          now(),
        );
        return next && { status: next, events: gatewayTransitions(current.status, next) };
      });
    }
    // Every HTTPRoute and GRPCRoute: one that no longer has a parent of Sluice's loses Sluice's entries.
    for (const route of this.#o.source.objects()) {
      if (route.kind !== 'HTTPRoute' && route.kind !== 'GRPCRoute') continue;
      const ns = route.metadata.namespace ?? '';
      const key = `${ns}/${route.metadata.name}`;
      const wanted = (route.kind === 'HTTPRoute' ? status.routes : status.grpcRoutes).get(key);
      const shown = (route as Current).status?.parents ?? [];
      const mine = this.#o.controllerName ?? GATEWAY_CONTROLLER_NAME;
      if (wanted === undefined && !shown.some((p) => p.controllerName === mine)) continue;
      this.#want(`${route.kind}/${key}`, (current) => {
        const parents = nextRouteParents(current.status?.parents, wanted, ns, now(), mine);
        return (
          parents && {
            status: { ...current.status, parents },
            events: routeTransitions(current.status?.parents, parents, ns, mine),
          }
        );
      });
    }
  }

  /**
   * Queues the write of one object's status; `next` gives it from the object as it is now (null:
   * none needed), with the condition changes it makes, recorded as Events once it is written.
   */
  #want(key: string, next: (current: Current) => { status: object; events: Transition[] } | null): void {
    this.#queue.want(key, () => {
      const [kind, ns, name] = key.split('/');
      const cached = this.#o.source.object(kind, ns, name) as Current | undefined;
      if (cached === undefined) {
        this.#written.delete(key); // deleted meanwhile
        return null;
      }
      const mine = this.#written.get(key);
      const fresh = mine !== undefined && !newer(cached.metadata.resourceVersion, mine.resourceVersion);
      const current: Current = fresh
        ? {
            ...cached,
            metadata: { ...cached.metadata, resourceVersion: mine.resourceVersion },
            status: mine.status as Current['status'],
          }
        : cached;
      const wanted = next(current);
      if (wanted === null) return null;
      const { status } = wanted;
      const path = STATUS_PATH[kind](ns, name);
      // A route: the whole object with its resourceVersion (others' parents kept, a race is a 409).
      const write =
        kind === 'HTTPRoute' || kind === 'GRPCRoute'
          ? this.#o.kube.request<Current>('PUT', path, { ...current, status })
          : this.#o.kube.request<Current>('PATCH', path, { status }, 'application/merge-patch+json');
      return write.then(
        (written) => {
          const resourceVersion = written?.metadata?.resourceVersion;
          if (resourceVersion) this.#written.set(key, { resourceVersion, status: written.status ?? status });
          this.#o.onStatusWrite?.(true, key, status);
          const eventNamespace = kind === 'GatewayClass' ? this.#o.eventsNamespace : ns;
          if (wanted.events.length > 0 && eventNamespace)
            void this.#events.record(
              {
                apiVersion: 'gateway.networking.k8s.io/v1',
                kind,
                namespace: ns,
                name,
                uid: cached.metadata.uid,
                eventNamespace,
              },
              wanted.events,
            );
          return 'done' as const;
        },
        (err: { status?: number }) => {
          this.#o.onStatusWrite?.(false, key, status);
          // 404: gone meanwhile. 409 (HTTPRoute): changed meanwhile; tried again from the cache.
          if (err.status === 409) this.#written.delete(key);
          return err.status === 404 ? ('done' as const) : ('retry' as const);
        },
      );
    });
  }
}
