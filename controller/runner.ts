/**
 * The controller's loop: informer events → relevant? → holdoff → build() → publish → status.
 *
 * Every replica watches and builds (a warm standby); only the leader pushes and writes status.
 * Events are coalesced: a build runs `holdoffMs` after the last relevant event, and at most
 * `maxHoldoffMs` after the first one of a burst. Not relevant: a GatewayRoute or GatewayPlugin
 * update that leaves its generation and labels alone (our own status writes), Secrets no
 * plugin references and Services no route sends traffic to.
 */
import type { Logger } from 'pino';
import type { GatewayPlugin, GatewayRoute, Resource, Secret, Service } from './api/index.ts';
import { type BuildResult, build } from './build.ts';
import type { ControllerMetrics } from './metrics.ts';
import { type PodEndpoint, Publisher } from './publish/publisher.ts';
import {
  type Informer,
  type InformerOptions,
  Informer as InformerImpl,
  type KubeObject,
} from './source/informers.ts';
import type { Kube } from './source/kube.ts';
import { resourceSetFrom } from './source/resource-set.ts';
import { type Generations, programmed } from './status/conditions.ts';
import { StatusWriter } from './status/status-writer.ts';

export interface RunnerOptions {
  kube: Kube;
  log: Logger;
  metrics: ControllerMetrics;
  /** The data plane's headless admin Service: its EndpointSlices list the pods. */
  dataplane: {
    namespace: string;
    service: string;
    portName?: string;
    scheme?: 'http' | 'https';
    tls?: { ca: string; serverName?: string };
  };
  adminToken: string;
  holdoffMs?: number;
  maxHoldoffMs?: number;
  resyncMs?: number;
  informer?: InformerOptions;
}

interface EndpointSlice extends KubeObject {
  ports?: { name?: string; port?: number }[] | null;
  endpoints?: {
    addresses: string[];
    conditions?: { ready?: boolean; terminating?: boolean };
    targetRef?: { name?: string };
  }[];
}

const GENERATIONS_KEPT = 64;

export class Runner {
  readonly publisher: Publisher;
  readonly #o: RunnerOptions;
  readonly #routes: Informer<GatewayRoute & KubeObject>;
  readonly #plugins: Informer<GatewayPlugin & KubeObject>;
  readonly #secrets: Informer<Secret & KubeObject>;
  readonly #services: Informer<Service & KubeObject>;
  readonly #slices: Informer<EndpointSlice>;
  readonly #status: StatusWriter;
  readonly #generations = new Map<string, Map<string, number>>();
  #referencedSecrets = new Set<string>();
  #referencedServices = new Set<string>();
  #last: BuildResult | null = null;
  #timer: NodeJS.Timeout | null = null;
  /** When the oldest change not yet built (or not yet on every pod) happened. */
  #firstPending: number | null = null;
  #unsynced: { hash: string; since: number } | null = null;
  #started = false;

  constructor(o: RunnerOptions) {
    this.#o = o;
    const m = o.metrics;
    const informer = (resource: string): InformerOptions => ({
      ...o.informer,
      onError: (err, attempt) => {
        m.watchErrors.labels(resource).inc();
        o.log.warn({ resource, attempt, err: (err as Error).message }, 'list/watch failed: retrying');
      },
      onList: () => m.relists.labels(resource).inc(),
    });
    const specChange = (type: string, obj: KubeObject, old?: KubeObject) =>
      type !== 'modified' ||
      old?.metadata.generation !== obj.metadata.generation ||
      JSON.stringify(old?.metadata.labels) !== JSON.stringify(obj.metadata.labels);
    this.#routes = new InformerImpl(
      o.kube,
      '/apis/sluice.dev/v1alpha1/gatewayroutes',
      (t, obj, old) => specChange(t, obj, old) && this.#changed(),
      informer('gatewayroutes'),
    );
    this.#plugins = new InformerImpl(
      o.kube,
      '/apis/sluice.dev/v1alpha1/gatewayplugins',
      (t, obj, old) => specChange(t, obj, old) && this.#changed(),
      informer('gatewayplugins'),
    );
    this.#secrets = new InformerImpl(
      o.kube,
      '/api/v1/secrets',
      (_t, obj) =>
        this.#referencedSecrets.has(`${obj.metadata.namespace}/${obj.metadata.name}`) && this.#changed(),
      informer('secrets'),
    );
    this.#services = new InformerImpl(
      o.kube,
      '/api/v1/services',
      (_t, obj) =>
        this.#referencedServices.has(`${obj.metadata.namespace}/${obj.metadata.name}`) && this.#changed(),
      informer('services'),
    );
    const { namespace, service } = o.dataplane;
    this.#slices = new InformerImpl(
      o.kube,
      `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices?labelSelector=${encodeURIComponent(`kubernetes.io/service-name=${service}`)}`,
      () => this.publisher.setPods(this.#endpoints()),
      informer('endpointslices'),
    );
    this.publisher = new Publisher({
      token: o.adminToken,
      tls: o.dataplane.tls,
      resyncMs: o.resyncMs,
      onChange: () => this.#podsChanged(),
      onPush: (result, seconds) => {
        m.pushes.labels(result).inc();
        m.pushSeconds.observe(seconds);
      },
      log: (msg, extra) => o.log.warn(extra ?? {}, msg),
    });
    this.#status = new StatusWriter(o.kube, (key) => this.#object(key), {
      onWrite: (ok, key, status) => {
        m.statusWrites.labels(ok ? 'ok' : 'error').inc();
        o.log.debug({ object: key, ok, status }, 'status written');
      },
    });
  }

  get #informers(): Informer<KubeObject>[] {
    return [
      this.#routes,
      this.#plugins,
      this.#secrets,
      this.#services,
      this.#slices,
    ] as Informer<KubeObject>[];
  }

  /** Starts watching; resolves once every kind is listed and the first snapshot is built. */
  async start(): Promise<void> {
    for (const i of this.#informers) i.start();
    await Promise.all(this.#informers.map((i) => i.synced));
    this.#started = true;
    this.#rebuild();
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    for (const i of this.#informers) i.stop();
    this.publisher.stop();
    this.#status.setActive(false);
  }

  /** Leader only: push and write status. */
  setLeading(leading: boolean): void {
    this.#o.metrics.leader.set(leading ? 1 : 0);
    this.publisher.setActive(leading);
    this.#status.setActive(leading);
    if (leading) this.#updateStatus();
  }

  get lastBuild(): BuildResult | null {
    return this.#last;
  }

  #changed(): void {
    const now = Date.now();
    this.#firstPending ??= now;
    if (!this.#started) return;
    if (this.#timer) clearTimeout(this.#timer);
    const holdoff = this.#o.holdoffMs ?? 100;
    const latest = this.#firstPending + (this.#o.maxHoldoffMs ?? 1_000);
    this.#timer = setTimeout(() => this.#rebuild(), Math.max(0, Math.min(holdoff, latest - now)));
  }

  #rebuild(): void {
    this.#timer = null;
    const changedAt = this.#firstPending ?? Date.now();
    this.#firstPending = null;
    const m = this.#o.metrics;
    const objects: Resource[] = [...this.#plugins.cache.values(), ...this.#routes.cache.values()];
    this.#referencedSecrets = referencedSecrets(this.#plugins.cache.values());
    for (const s of this.#secrets.cache.values())
      if (this.#referencedSecrets.has(`${s.metadata.namespace}/${s.metadata.name}`)) objects.push(s);
    this.#referencedServices = referencedServices(this.#routes.cache.values());
    for (const s of this.#services.cache.values())
      if (this.#referencedServices.has(`${s.metadata.namespace}/${s.metadata.name}`)) objects.push(s);
    const started = process.hrtime.bigint();
    const result = build(resourceSetFrom(objects, { withServices: true }));
    m.buildSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
    m.builds.labels(result.diagnostics.length ? 'with_errors' : 'ok').inc();
    const { hash } = result.snapshot;
    // Which generation of each object this hash stands for. One table can come from different
    // object sets (a GatewayPlugin no route uses does not change it), so every build adds to
    // the map of its hash; the newest hashes are kept.
    const gens = this.#generations.get(hash) ?? new Map<string, number>();
    for (const [key, st] of Object.entries(result.status))
      if (st.conditions.every((c) => c.status === 'True')) gens.set(key, st.observedGeneration);
    this.#generations.delete(hash);
    this.#generations.set(hash, gens);
    while (this.#generations.size > GENERATIONS_KEPT)
      this.#generations.delete(this.#generations.keys().next().value!);
    if (this.#last?.snapshot.hash !== hash) {
      m.snapshotBytes.set(Buffer.byteLength(JSON.stringify(result.snapshot)));
      m.snapshotInfo.reset();
      m.snapshotInfo.labels(hash).set(1);
      this.#unsynced = { hash, since: this.#unsynced?.since ?? changedAt };
    }
    this.#last = result;
    this.#o.log.info(
      { hash, routes: result.snapshot.table.routes.length, problems: result.diagnostics.length },
      'built',
    );
    this.publisher.publish(result.snapshot);
    this.#podsChanged();
  }

  #podsChanged(): void {
    const pods = [...this.publisher.pods.values()];
    const desired = this.#last?.snapshot.hash;
    const inSync = pods.filter((p) => p.hash === desired).length;
    this.#o.metrics.pods.labels('found').set(pods.length);
    this.#o.metrics.pods.labels('in_sync').set(inSync);
    if (this.#unsynced && this.#unsynced.hash === desired && pods.length > 0 && inSync === pods.length) {
      this.#o.metrics.syncSeconds.observe((Date.now() - this.#unsynced.since) / 1000);
      this.#unsynced = null;
    }
    this.#updateStatus();
  }

  #updateStatus(): void {
    const r = this.#last;
    if (r === null) return;
    // Until every pod has been asked once, "0 of 3" would be a guess: wait (no status flapping on restart).
    if ([...this.publisher.pods.values()].some((p) => p.hash === null && p.failures === 0)) return;
    const pods = [...this.publisher.pods.values()].map((p) => ({
      name: p.endpoint.name,
      hash: p.hash,
      rejected: p.rejected,
    }));
    const generations: Generations = this.#generations;
    for (const [key, st] of Object.entries(r.status)) {
      const conditions = [...st.conditions, programmed(key, st, r.snapshot.hash, pods, generations)];
      this.#status.want({ key, observedGeneration: st.observedGeneration, conditions });
    }
  }

  #object(key: string): GatewayRoute | GatewayPlugin | undefined {
    const [kind, ns, name] = key.split('/');
    const informer = kind === 'GatewayRoute' ? this.#routes : kind === 'GatewayPlugin' ? this.#plugins : null;
    return informer?.cache.get(`${ns}/${name}`);
  }

  #endpoints(): PodEndpoint[] {
    const out: PodEndpoint[] = [];
    const scheme = this.#o.dataplane.scheme ?? 'http';
    for (const slice of this.#slices.cache.values()) {
      const ports = slice.ports ?? [];
      const port = (ports.find((p) => p.name === (this.#o.dataplane.portName ?? 'admin')) ?? ports[0])?.port;
      if (port === undefined) continue;
      for (const e of slice.endpoints ?? []) {
        const address = e.addresses?.[0];
        if (!address || e.conditions?.terminating) continue;
        const host = address.includes(':') ? `[${address}]` : address;
        out.push({
          key: `${host}:${port}`,
          name: e.targetRef?.name ?? `${host}:${port}`,
          url: `${scheme}://${host}:${port}`,
        });
      }
    }
    return out;
  }
}

/** "namespace/name" of every Secret a GatewayPlugin's config names through a secretKeyRef. */
export function referencedSecrets(plugins: Iterable<GatewayPlugin>): Set<string> {
  const out = new Set<string>();
  const walk = (ns: string, v: unknown): void => {
    if (Array.isArray(v)) for (const x of v) walk(ns, x);
    else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (k === 'secretKeyRef' && x && typeof (x as { name?: unknown }).name === 'string')
          out.add(`${ns}/${(x as { name: string }).name}`);
        else walk(ns, x);
      }
    }
  };
  for (const p of plugins) walk(p.metadata.namespace ?? 'default', p.spec?.config);
  return out;
}

/** "namespace/name" of every Service a GatewayRoute sends traffic to (service.backendRef). */
export function referencedServices(routes: Iterable<GatewayRoute>): Set<string> {
  const out = new Set<string>();
  for (const r of routes) {
    const name = (r.spec as { service?: { backendRef?: { name?: unknown } } } | undefined)?.service
      ?.backendRef?.name;
    if (typeof name === 'string') out.add(`${r.metadata.namespace ?? 'default'}/${name}`);
  }
  return out;
}
