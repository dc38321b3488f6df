/**
 * Push by hash. Each data-plane pod (from the EndpointSlices of the data plane's headless admin
 * Service, not-ready pods included: a pod is only ready once it has a config) has its own
 * state: the hash it last reported, and a backoff. A pod whose hash differs from the desired
 * snapshot gets `PUT /config`; one that reports the empty hash (restarted) gets it again; one
 * already in sync gets nothing, so a no-op change or a controller restart pushes nothing. A pod
 * that answers 422 keeps its old config; its errors are kept for the status of the objects
 * they name. Every pod is asked its hash again every `resyncMs`.
 */
import type { SpanContext } from '@opentelemetry/api';
import { Agent, request } from 'undici';
import type { Snapshot } from '../../dataplane/config/route-table.ts';
import type { TableError } from '../../dataplane/config/validate.ts';
import { endPushSpan, startPushSpan } from '../tracing.ts';

export interface PodEndpoint {
  /** "address:port", unique per pod. */
  key: string;
  name: string;
  url: string;
}

export interface PodState {
  endpoint: PodEndpoint;
  /** What the pod runs ('' = nothing; null = not known yet). */
  hash: string | null;
  /** The last snapshot it refused, and why. */
  rejected: { hash: string; errors: TableError[] } | null;
  failures: number;
  lastError: string | null;
}

export interface PublisherOptions {
  token: string;
  /** HTTPS to the pods: the CA that signed their admin certificate, and the name it was issued for (pods are dialled by IP). */
  tls?: { ca: string; serverName?: string };
  timeoutMs?: number;
  resyncMs?: number;
  backoffMs?: { base: number; max: number };
  /** Called whenever a pod's reported hash or rejection changes, or pods come and go. */
  onChange?: () => void;
  onPush?: (result: 'applied' | 'unchanged' | 'rejected' | 'error', seconds: number) => void;
  log?: (msg: string, extra?: Record<string, unknown>) => void;
}

/** A snapshot to run, its JSON, and the span of the build that made it (for the pushes' links). */
interface Desired {
  snapshot: Snapshot;
  body: string;
  built: SpanContext | null;
}

export class Publisher {
  readonly #pods = new Map<string, PodState>();
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #busy = new Set<string>();
  readonly #o: Required<Omit<PublisherOptions, 'log' | 'onChange' | 'onPush' | 'tls'>> &
    Pick<PublisherOptions, 'log' | 'onChange' | 'onPush'>;
  readonly #dispatcher: Agent | undefined;
  /** The snapshot to run and its JSON, kept together: a push always sends the bytes of the hash it records. */
  #desired: Desired | null = null;
  #active = false;
  #resync: NodeJS.Timeout | null = null;

  constructor(opts: PublisherOptions) {
    this.#o = { timeoutMs: 5_000, resyncMs: 10_000, backoffMs: { base: 200, max: 10_000 }, ...opts };
    this.#dispatcher = opts.tls
      ? new Agent({
          connect: { ca: opts.tls.ca, ...(opts.tls.serverName ? { servername: opts.tls.serverName } : {}) },
        })
      : undefined;
  }

  get pods(): ReadonlyMap<string, PodState> {
    return this.#pods;
  }

  get desired(): Snapshot | null {
    return this.#desired?.snapshot ?? null;
  }

  /** Only an active publisher (the leader) talks to pods. */
  setActive(active: boolean): void {
    if (this.#active === active) return;
    this.#active = active;
    if (active) {
      this.#resync = setInterval(() => this.#all(true), this.#o.resyncMs);
      this.#resync.unref();
      this.#all(true);
    } else {
      if (this.#resync) clearInterval(this.#resync);
      for (const t of this.#timers.values()) clearTimeout(t);
      this.#timers.clear();
    }
  }

  setPods(endpoints: PodEndpoint[]): void {
    const keep = new Set(endpoints.map((e) => e.key));
    let changed = false;
    for (const key of [...this.#pods.keys()]) {
      if (keep.has(key)) continue;
      this.#pods.delete(key);
      clearTimeout(this.#timers.get(key));
      this.#timers.delete(key);
      changed = true;
    }
    for (const e of endpoints) {
      if (this.#pods.has(e.key)) continue;
      this.#pods.set(e.key, { endpoint: e, hash: null, rejected: null, failures: 0, lastError: null });
      changed = true;
      if (this.#active) this.#sync(e.key, true);
    }
    if (changed) this.#o.onChange?.();
  }

  /** `built`: the span of the build that made it (controller/tracing.ts), which its pushes link to. */
  publish(snapshot: Snapshot, built: SpanContext | null = null): void {
    if (this.#desired?.snapshot.hash === snapshot.hash) return;
    this.#desired = { snapshot, body: JSON.stringify(snapshot), built };
    if (this.#active) this.#all(false);
  }

  stop(): void {
    this.setActive(false);
    this.#dispatcher?.close().catch(() => {});
  }

  #all(ask: boolean): void {
    for (const key of this.#pods.keys()) this.#sync(key, ask);
  }

  /** Brings one pod to the desired hash; `ask` first asks the pod what it runs. */
  #sync(key: string, ask: boolean): void {
    if (this.#busy.has(key) || !this.#active) return;
    clearTimeout(this.#timers.get(key));
    this.#timers.delete(key);
    this.#busy.add(key);
    const desired = this.#desired;
    this.#step(key, ask, desired)
      .then(
        () => {
          const pod = this.#pods.get(key);
          if (pod) pod.failures = 0;
          // The desired snapshot moved on while this pod was being handled: go again.
          return this.#desired !== desired;
        },
        (err: Error) => {
          const pod = this.#pods.get(key);
          if (!pod) return false;
          pod.failures++;
          pod.lastError = err.message;
          this.#o.log?.('push failed', { pod: pod.endpoint.name, err: err.message, failures: pod.failures });
          const { base, max } = this.#o.backoffMs;
          const t = setTimeout(() => this.#sync(key, true), Math.min(base * 2 ** (pod.failures - 1), max));
          t.unref();
          this.#timers.set(key, t);
          return false;
        },
      )
      .then((again) => {
        this.#busy.delete(key);
        if (again) this.#sync(key, false);
      });
  }

  async #step(key: string, ask: boolean, wanted: Desired | null): Promise<void> {
    const pod = this.#pods.get(key);
    if (!pod) return;
    if (ask || pod.hash === null) this.#report(pod, await this.#getHash(pod));
    if (wanted === null) return;
    const desired = wanted.snapshot;
    if (pod.hash === desired.hash || pod.rejected?.hash === desired.hash) return;
    const url = `${pod.endpoint.url}/config`;
    const span = startPushSpan(pod.endpoint.name, url, desired.hash, wanted.built);
    const start = process.hrtime.bigint();
    let status = 0;
    let result: 'applied' | 'unchanged' | 'rejected' | 'error' = 'error';
    let failure: Error | undefined;
    try {
      const res = await request(url, {
        method: 'PUT',
        headers: { authorization: `Bearer ${this.#o.token}`, 'content-type': 'application/json' },
        body: wanted.body,
        headersTimeout: this.#o.timeoutMs,
        bodyTimeout: this.#o.timeoutMs,
        dispatcher: this.#dispatcher,
      });
      status = res.statusCode;
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      const body = (await res.body.json().catch(() => ({}))) as {
        result?: string;
        errors?: TableError[];
        hash?: string;
      };
      if (res.statusCode === 200) {
        result = body.result === 'unchanged' ? 'unchanged' : 'applied';
        this.#o.onPush?.(result, seconds);
        this.#report(pod, desired.hash, null);
      } else if (res.statusCode === 422) {
        result = 'rejected';
        this.#o.onPush?.('rejected', seconds);
        this.#report(pod, body.hash ?? pod.hash ?? '', { hash: desired.hash, errors: body.errors ?? [] });
      } else {
        this.#o.onPush?.('error', seconds);
        throw new Error(`PUT /config answered ${res.statusCode}`);
      }
    } catch (err) {
      failure = err as Error;
      throw err;
    } finally {
      endPushSpan(span, result, status, failure);
    }
  }

  async #getHash(pod: PodState): Promise<string> {
    const res = await request(`${pod.endpoint.url}/config`, {
      headersTimeout: this.#o.timeoutMs,
      bodyTimeout: this.#o.timeoutMs,
      dispatcher: this.#dispatcher,
    });
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new Error(`GET /config answered ${res.statusCode}`);
    }
    return ((await res.body.json()) as { hash: string }).hash;
  }

  #report(pod: PodState, hash: string, rejected: PodState['rejected'] | undefined = undefined): void {
    const changed = pod.hash !== hash || (rejected !== undefined && pod.rejected?.hash !== rejected?.hash);
    pod.hash = hash;
    if (rejected !== undefined) pod.rejected = rejected;
    pod.lastError = null;
    if (changed) this.#o.onChange?.();
  }
}
