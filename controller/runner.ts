/**
 * The controller's loop: informer events → relevant? → holdoff → build() → publish → status.
 *
 * Every replica watches and builds (a warm standby); only the leader pushes and writes status.
 * Which events matter is source/relevance.ts; coalescing is holdoff.ts; the pods come from
 * publish/discovery.ts; which generation each pod runs is status/generation-ledger.ts.
 */
import type { Logger } from 'pino';
import type { GatewayPlugin, GatewayRoute, Secret, Service } from './api/index.ts';
import type { AdminTokens } from '../dataplane/config/admin-auth.ts';
import type { Snapshot } from '../dataplane/config/route-table.ts';
import type { BuildResult } from './build.ts';
import { type Clock, Holdoff, systemClock } from './holdoff.ts';
import type { ControllerMetrics } from './metrics.ts';
import { type EndpointSlice, endpointSlicesPath, podEndpoints } from './publish/discovery.ts';
import { Publisher } from './publish/publisher.ts';
import { Informer, type InformerOptions, type KubeObject } from './source/informers.ts';
import type { Kube } from './source/kube.ts';
import {
  isReferenced,
  isReferencedSlice,
  NO_REFERENCES,
  type References,
  referencesOf,
  relevantObjects,
  specChanged,
} from './source/relevance.ts';
import { resourceSetFrom } from './source/resource-set.ts';
import { GatewayApiSource } from './source/gateway-api-source.ts';
import { IngressSource } from './source/ingress-source.ts';
import { DEFAULT_INGRESS_CLASS } from './ingress/classes.ts';
import type { IngressReport } from './ingress/index.ts';
import { EventRecorder } from './status/events.ts';
import { IngressWriter } from './status/ingress-writer.ts';
import type { PortRange } from './gateway-api/ports.ts';
import { Watched, type WatchNamespaces } from './source/watched.ts';
import { GatewayApiWriter } from './status/gateway-api-writer.ts';
import type { GatewayServiceType } from './api/gateway-api.ts';
import { GenerationLedger } from './status/generation-ledger.ts';
import { StatusWriter } from './status/status-writer.ts';
import { tracedBuild } from './tracing.ts';

export interface RunnerOptions {
  kube: Kube;
  log: Logger;
  metrics: ControllerMetrics;
  /** The controller's own namespace (its Lease's): where Events on cluster-scoped objects (GatewayClasses) go. */
  eventsNamespace?: string;
  /** The data plane's headless admin Service: its EndpointSlices list the pods. */
  dataplane: {
    namespace: string;
    service: string;
    portName?: string;
    scheme?: 'http' | 'https';
    tls?: { ca: string | (() => readonly string[]); serverName?: string };
  };
  adminToken: AdminTokens;
  /** Where routes, plugins and the Secrets and Services they name are watched; null or absent: everywhere. */
  watchNamespaces?: WatchNamespaces;
  /**
   * The installation's class: it serves the GatewayRoutes and GatewayPlugins labelled
   * `sluice.dev/class: <class>`; without one, those with no such label. So two installations
   * in one cluster never serve (nor write the status of) the same object.
   */
  className?: string | null;
  holdoffMs?: number;
  maxHoldoffMs?: number;
  resyncMs?: number;
  /** Serve Gateway API objects once their CRDs exist (controller/source/gateway-api-source.ts). */
  gatewayApi?: boolean;
  /** Serve Ingresses of Sluice's classes (controller/ingress/); default true. */
  ingress?: boolean;
  /** --ingress-class (default sluice). */
  ingressClass?: string;
  /** "namespace/name" of the Service whose address Ingresses' status.loadBalancer shows; absent: none written. */
  publishService?: string | null;
  /** Data-plane ports for Gateway listeners. */
  gatewayPorts?: PortRange;
  /**
   * The GatewayClass spec.controllerName served (default sluice.dev/gateway-controller): two
   * installations with different names never serve, nor write the status of, each other's
   * GatewayClasses, Gateways and route parents.
   */
  gatewayControllerName?: string;
  /** The data-plane pods' labels: the selector of each Gateway's Service (none: no selector). */
  gatewayServiceSelector?: Record<string, string>;
  /** The type of each Gateway's Service (default ClusterIP). */
  gatewayServiceType?: GatewayServiceType;
  informer?: InformerOptions;
  clock?: Clock;
}

/** What the runner keeps of a build: everything but the table, which the publisher holds as bytes. */
export type LastBuild = Omit<BuildResult, 'snapshot'> & { hash: string; routes: number };

export const CLASS_LABEL = 'sluice.dev/class';

/** The label selector of an installation's objects: its class, or (none) the unlabelled ones. */
export function classSelector(className: string | null): string {
  return className ? `${CLASS_LABEL}=${className}` : `!${CLASS_LABEL}`;
}

/**
 * Helm's release records, left out by the API server: Sluice never reads them, and they are most
 * of a cluster's Secrets by size (a gzipped chart and its values per revision, tens to hundreds of
 * KiB each): a Helm history alone can hold more than the controller's memory limit, and each
 * upgrade would wake the informer for nothing. Helm labels every record `owner: helm` (a Secret a
 * chart creates is not labelled so). A label selector, not `type!=helm.sh/release.v1`: the
 * `type` field selector is served by kube-apiserver but not by every API server (kapi's).
 */
export const SECRET_LABEL_SELECTOR = 'owner!=helm';

export class Runner {
  readonly publisher: Publisher;
  readonly #o: RunnerOptions;
  readonly #clock: Clock;
  readonly #routes: Watched<GatewayRoute & KubeObject>;
  readonly #plugins: Watched<GatewayPlugin & KubeObject>;
  readonly #secrets: Watched<Secret & KubeObject>;
  readonly #services: Watched<Service & KubeObject>;
  /** The EndpointSlices of the watched namespaces: those of referenced Services give routes their endpoints. */
  readonly #serviceSlices: Watched<EndpointSlice & KubeObject>;
  readonly #slices: Informer<EndpointSlice>;
  /** Gateway API inputs; null when turned off. */
  readonly #gatewayApi: GatewayApiSource | null;
  /** Their status and the Gateways' Services (leader only); null when turned off. */
  readonly #gatewayWriter: GatewayApiWriter | null;
  /** Ingress inputs and the leader's writes for them; null when turned off. */
  readonly #ingress: IngressSource | null;
  readonly #ingressWriter: IngressWriter | null;
  readonly #status: StatusWriter;
  readonly #holdoff: Holdoff;
  readonly #ledger = new GenerationLedger();
  #refs: References = NO_REFERENCES;
  /** The last build without its table: the publisher holds the table's bytes (see its Desired). */
  #last: LastBuild | null = null;
  /** The newest hash not yet on every pod, and when the oldest change it holds happened. */
  #unsynced: { hash: string; since: number } | null = null;

  constructor(o: RunnerOptions) {
    this.#o = o;
    this.#clock = o.clock ?? systemClock;
    const m = o.metrics;
    const informerOptions = (resource: string): InformerOptions => ({
      ...o.informer,
      onError: (err, attempt) => {
        m.watchErrors.labels(resource).inc();
        // Once when it starts failing (the metric counts every attempt), not once per retry.
        o.log[attempt === 1 ? 'warn' : 'debug'](
          { resource, attempt, err: (err as Error).message },
          'list/watch failed: retrying with backoff',
        );
      },
      onList: () => m.relists.labels(resource).inc(),
    });
    const watched = <T extends KubeObject>(
      resource: 'gatewayroutes' | 'gatewayplugins' | 'secrets' | 'services' | 'endpointslices',
      onChange: ConstructorParameters<typeof Watched<T>>[3],
    ) =>
      new Watched<T>(
        o.kube,
        resource,
        o.watchNamespaces ?? null,
        onChange,
        informerOptions(resource),
        resource === 'gatewayroutes' || resource === 'gatewayplugins'
          ? { labelSelector: classSelector(o.className ?? null) }
          : resource === 'secrets'
            ? { labelSelector: SECRET_LABEL_SELECTOR }
            : {},
      );
    const changed = () => this.#holdoff.changed();
    this.#routes = watched('gatewayroutes', (t, obj, old) => {
      if (specChanged(t, obj, old)) changed();
    });
    this.#plugins = watched('gatewayplugins', (t, obj, old) => {
      if (specChanged(t, obj, old)) changed();
    });
    this.#secrets = watched('secrets', (_t, obj) => {
      if (isReferenced(this.#refs.secrets, obj)) changed();
    });
    this.#services = watched('services', (t, obj) => {
      this.#gatewayWriter?.serviceObserved(t, obj);
      this.#ingressWriter?.serviceObserved(obj);
      if (isReferenced(this.#refs.services, obj)) changed();
    });
    this.#serviceSlices = watched('endpointslices', (_t, obj) => {
      if (isReferencedSlice(this.#refs.services, obj)) changed();
    });
    this.#gatewayApi =
      o.gatewayApi === true
        ? new GatewayApiSource(
            o.kube,
            o.watchNamespaces ?? null,
            changed,
            informerOptions,
            o.gatewayControllerName,
          )
        : null;
    this.#gatewayWriter = this.#gatewayApi && this.#gatewayApiWriter(this.#gatewayApi);
    this.#ingress =
      o.ingress === false
        ? null
        : new IngressSource(
            o.kube,
            o.watchNamespaces ?? null,
            o.ingressClass ?? DEFAULT_INGRESS_CLASS,
            changed,
            informerOptions,
          );
    this.#ingressWriter =
      this.#ingress &&
      new IngressWriter({
        kube: o.kube,
        source: this.#ingress,
        services: this.#services.cache,
        publishService: o.publishService ?? null,
        events: new EventRecorder(o.kube),
        onStatusWrite: (ok, key, status) => {
          m.statusWrites.labels(ok ? 'ok' : 'error').inc();
          o.log.debug({ object: key, ok, status }, 'status written');
        },
      });
    const { namespace, service, portName, scheme } = o.dataplane;
    this.#slices = new Informer<EndpointSlice>(
      o.kube,
      endpointSlicesPath(namespace, service),
      () => this.publisher.setPods(podEndpoints(this.#slices.cache.values(), { portName, scheme })),
      informerOptions('endpointslices'),
    );
    this.#holdoff = new Holdoff((since) => this.#rebuild(since), {
      holdoffMs: o.holdoffMs,
      maxHoldoffMs: o.maxHoldoffMs,
      clock: this.#clock,
    });
    this.publisher = new Publisher({
      token: o.adminToken,
      tls: o.dataplane.tls,
      resyncMs: o.resyncMs,
      onChange: () => this.#podsChanged(),
      onPush: (result, seconds) => {
        m.pushes.labels(result).inc();
        m.pushSeconds.observe(seconds);
      },
      log: (level, msg, extra) => o.log[level](extra, msg),
    });
    this.#status = new StatusWriter(o.kube, (key) => this.#object(key), {
      onWrite: (ok, key, status) => {
        m.statusWrites.labels(ok ? 'ok' : 'error').inc();
        o.log.debug({ object: key, ok, status }, 'status written');
      },
    });
  }

  get #informers(): { start(): void; stop(): void; synced: Promise<void> }[] {
    return [
      this.#routes,
      this.#plugins,
      this.#secrets,
      this.#services,
      this.#serviceSlices,
      this.#slices,
      ...(this.#gatewayApi ? [this.#gatewayApi] : []),
      ...(this.#ingress ? [this.#ingress] : []),
    ];
  }

  /** Starts watching; resolves once every kind is listed and the first snapshot is built. */
  async start(): Promise<void> {
    for (const i of this.#informers) i.start();
    await Promise.all(this.#informers.map((i) => i.synced));
    this.#holdoff.start();
  }

  stop(): void {
    this.#holdoff.stop();
    for (const i of this.#informers) i.stop();
    this.publisher.stop();
    this.#status.setActive(false);
    this.#gatewayWriter?.setActive(false);
    this.#ingressWriter?.setActive(false);
  }

  /** Leader only: push and write status. */
  setLeading(leading: boolean): void {
    this.#o.metrics.leader.set(leading ? 1 : 0);
    this.publisher.setActive(leading);
    this.#status.setActive(leading);
    this.#gatewayWriter?.setActive(leading);
    this.#ingressWriter?.setActive(leading);
    if (leading) this.#updateStatus();
  }

  get lastBuild(): LastBuild | null {
    return this.#last;
  }

  /** The snapshot built last, decoded from the bytes pushed (GET /debug/config, tests). */
  snapshot(): Snapshot | null {
    return this.publisher.desired;
  }

  #rebuild(changedAt: number): void {
    const m = this.#o.metrics;
    this.#refs = withReferences(
      withReferences(
        referencesOf(this.#plugins.cache.values(), this.#routes.cache.values()),
        this.#gatewayApi?.references(),
      ),
      this.#ingress?.references(),
    );
    const objects = relevantObjects(
      {
        plugins: this.#plugins.cache.values(),
        routes: this.#routes.cache.values(),
        secrets: this.#secrets.cache.values(),
        services: this.#services.cache.values(),
        endpointSlices: this.#serviceSlices.cache.values(),
      },
      this.#refs,
    );
    // Whether every Gateway is in this build (a Gateway's Service goes only when it is not).
    const gatewayApiListed = this.#gatewayApi?.listed ?? false;
    if (this.#gatewayApi) objects.push(...this.#gatewayApi.objects());
    if (this.#ingress) objects.push(...this.#ingress.objects());
    const started = process.hrtime.bigint();
    const { result, built } = tracedBuild(resourceSetFrom(objects, { withServices: true }), {
      gatewayPorts: this.#o.gatewayPorts,
      gatewayControllerName: this.#o.gatewayControllerName,
      ingress: this.#ingress !== null,
      ingressClass: this.#o.ingressClass,
    });
    m.buildSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
    m.builds.labels(result.diagnostics.length ? 'with_errors' : 'ok').inc();
    const { hash } = result.snapshot;
    this.#ledger.record({ hash, status: result.status });
    this.#gatewayWriter?.built(hash, result.gatewayApi, gatewayApiListed);
    this.#ingressWriter?.built(result.ingress);
    countAnnotations(m, result.ingress);
    if (this.#last?.hash !== hash) {
      m.snapshotInfo.reset();
      m.snapshotInfo.labels(hash).set(1);
      this.#unsynced = { hash, since: this.#unsynced?.since ?? changedAt };
    }
    const routes = result.snapshot.table.routes.length;
    this.#last = {
      hash,
      routes,
      status: result.status,
      diagnostics: result.diagnostics,
      gatewayApi: result.gatewayApi,
      ingress: result.ingress,
    };
    this.#o.log.info({ hash, routes, problems: result.diagnostics.length }, 'built');
    this.publisher.publish(result.snapshot, built);
    m.snapshotBytes.set(this.publisher.desiredBytes);
    this.#podsChanged();
  }

  #podsChanged(): void {
    const pods = [...this.publisher.pods.values()];
    const desired = this.#last?.hash;
    // A pod that stopped answering is not in sync, whatever it acknowledged last.
    const inSync = pods.filter((p) => p.hash === desired && p.failures === 0).length;
    const m = this.#o.metrics;
    m.pods.labels('found').set(pods.length);
    m.pods.labels('in_sync').set(inSync);
    m.pods.labels('behind').set(pods.length - inSync);
    m.pods.labels('failing').set(pods.filter((p) => p.failures > 0).length);
    if (this.#unsynced && this.#unsynced.hash === desired && pods.length > 0 && inSync === pods.length) {
      this.#o.metrics.syncSeconds.observe((this.#clock.now() - this.#unsynced.since) / 1000);
      this.#unsynced = null;
    }
    this.#updateStatus();
  }

  #updateStatus(): void {
    const r = this.#last;
    if (r === null) return;
    const pods = [...this.publisher.pods.values()];
    // While a pod is being asked or pushed to (and has not failed), its answer is moments away:
    // "0 of 2" written now would be a guess, then an edit or a takeover would flap every object
    // through Pending. The publisher calls back once the attempt ends.
    if (pods.some((p) => (p.inFlight || p.hash === null) && p.failures === 0)) {
      this.publisher.callBackWhenSettled();
      return;
    }
    const views = pods.map((p) => ({
      name: p.endpoint.name,
      hash: p.hash,
      rejected: p.rejected,
      error: p.failures > 0 ? p.lastError : null,
      failingLong: p.failingLong,
    }));
    const written = (key: string) =>
      this.#object(key)?.status?.conditions?.find((c) => c.type === 'Programmed');
    const built = { ...r, withheld: this.publisher.withheld };
    for (const wanted of this.#ledger.statuses(built, views, written)) this.#status.want(wanted);
    this.#gatewayWriter?.update(views, this.publisher.withheld);
  }

  #gatewayApiWriter(source: GatewayApiSource): GatewayApiWriter {
    const m = this.#o.metrics;
    return new GatewayApiWriter({
      kube: this.#o.kube,
      source,
      services: this.#services.cache,
      controllerName: this.#o.gatewayControllerName,
      eventsNamespace: this.#o.eventsNamespace,
      service: {
        controllerName: this.#o.gatewayControllerName,
        selector: this.#o.gatewayServiceSelector ?? {},
        type: this.#o.gatewayServiceType ?? 'ClusterIP',
      },
      onStatusWrite: (ok, key, status) => {
        m.statusWrites.labels(ok ? 'ok' : 'error').inc();
        this.#o.log.debug({ object: key, ok, status }, 'status written');
      },
      onServiceWrite: (verb, ok, key) => {
        m.gatewayServiceWrites.labels(verb, ok ? 'ok' : 'error').inc();
        this.#o.log[ok ? 'info' : 'warn']({ service: key, verb, ok }, 'gateway service written');
      },
    });
  }

  #object(key: string): GatewayRoute | GatewayPlugin | undefined {
    const [kind, ns, name] = key.split('/');
    const informer = kind === 'GatewayRoute' ? this.#routes : kind === 'GatewayPlugin' ? this.#plugins : null;
    return informer?.cache.get(`${ns}/${name}`);
  }
}

/** The not-honoured annotations of Sluice's Ingresses, counted per annotation and reason. */
function countAnnotations(m: ControllerMetrics, reports: ReadonlyMap<string, IngressReport>): void {
  m.ingressAnnotations.reset();
  for (const r of reports.values())
    for (const p of r.problems) if (p.annotation) m.ingressAnnotations.labels(p.annotation, p.reason).inc();
}

/** Both sets of references in one (the Gateway API's added to the GatewayRoutes' and plugins'). */
function withReferences(a: References, b: References | undefined): References {
  if (b === undefined || (b.secrets.size === 0 && b.services.size === 0)) return a;
  return {
    secrets: new Set([...a.secrets, ...b.secrets]),
    services: new Set([...a.services, ...b.services]),
  };
}
