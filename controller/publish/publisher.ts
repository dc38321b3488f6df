/**
 * Push by hash. Each data-plane pod (from the EndpointSlices of the data plane's headless admin
 * Service, not-ready pods included: a pod is only ready once it has a config) has its own
 * state: the hash it last acknowledged, and a backoff. A pod whose hash differs from the desired
 * snapshot gets `PUT /config`; one that reports the empty hash (restarted) gets it again; one
 * already in sync gets nothing, so a no-op change or a controller restart pushes nothing. A pod
 * that answers 422 keeps its old config; its errors are kept for the status of the objects
 * they name. Every reachable pod is asked its hash once per `resyncMs` (one cheap GET: idle
 * means idle). A pod that fails is retried with capped exponential backoff and jitter — not
 * sooner, whatever happens meanwhile — and logged once per change of state, never per attempt.
 */
import type { SpanContext } from '@opentelemetry/api';
import { gunzipSync, gzipSync } from 'node:zlib';
import { Agent, request } from 'undici';
import type { Snapshot } from '../../dataplane/config/route-table.ts';
import { type AdminTokens, tokenList } from '../../dataplane/config/admin-auth.ts';
import { snapshotBody, unpackTable } from '../../dataplane/config/wire.ts';
import type { TableError } from '../../dataplane/config/validate.ts';
import { endPushSpan, startPushSpan } from '../tracing.ts';
import { withDefaults } from '../../dataplane/config/defaults.ts';
import { CONFIG_MAX_BYTES } from '../../dataplane/config/limits.ts';

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
  /** Failed attempts in a row, the first one's time, and the last one's error ("connection refused"). */
  failures: number;
  failingSince: number | null;
  lastError: string | null;
  /** It has been failing for longer than `failingWarnMs`: a fault, no longer a hiccup. */
  failingLong: boolean;
  /** A GET or PUT to it is under way. */
  inFlight: boolean;
  /** It refused a gzipped body (a data plane older than gzip pushes): it gets plain JSON. */
  plainOnly: boolean;
}

export interface PublisherOptions {
  /**
   * The admin token, or the tokens valid now, newest first: a push refused with 401 is sent
   * again with the next one (during a rotation the pod may not have the new token yet).
   */
  token: AdminTokens;
  /**
   * HTTPS to the pods: the CA that signed their admin certificate (or the CAs trusted now, newest
   * first: a CA file during a rotation), and the name it was issued for (pods are dialled by IP).
   */
  tls?: { ca: string | (() => readonly string[]); serverName?: string };
  timeoutMs?: number;
  resyncMs?: number;
  backoffMs?: { base: number; max: number };
  /** A number in [0, 1) (tests pass a fixed one): spreads the retries of many controllers' pods. */
  random?: () => number;
  now?: () => number;
  /** How long a pod may fail before that is a fault worth a Warning (default 60 s). */
  failingWarnMs?: number;
  /** The largest body a data plane accepts (default CONFIG_MAX_BYTES): a larger snapshot is not pushed. */
  maxBodyBytes?: number;
  /**
   * Called when a pod's acknowledged hash, rejection or reachability changes, or pods come and
   * go — after the attempt that changed it has ended, so `inFlight` is already false.
   */
  onChange?: () => void;
  /** Every attempt at a pod that needed something: a PUT's result, or 'error' for any failure (refused connection, timeout, a 5xx, a failed GET). */
  onPush?: (result: 'applied' | 'unchanged' | 'rejected' | 'error', seconds: number) => void;
  log?: (level: 'info' | 'warn', msg: string, extra: Record<string, unknown>) => void;
}

/**
 * A snapshot to run as its hash and JSON, and the span of the build that made it (for the
 * pushes' links). The JSON is encoded once (dataplane/config/wire.ts: the table's canonical
 * text, written for its hash already) and gzipped once, as bytes every push sends as they are
 * (Content-Encoding: gzip). Kept gzipped: 5,000 routes are 6.9 MB of JSON and ~0.4 MB gzipped
 * at level 1 (~13 ms), and the controller held two such bodies across an edit (the one pushed,
 * the one being built): ~13 MiB of its 192Mi. The table itself is not kept: at 5,000 routes it
 * is ~13 MB of heap, which the next build would find still alive.
 */
interface Desired {
  hash: string;
  /** The wire JSON, gzipped. */
  body: Buffer;
  /** The wire JSON's length: what a data plane's limit counts. */
  bytes: number;
  /** Why it is not pushed (a body the pods would refuse unread); null: it is. */
  withheld: string | null;
  built: SpanContext | null;
}

export class Publisher {
  readonly #pods = new Map<string, PodState>();
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #o: Required<Omit<PublisherOptions, 'log' | 'onChange' | 'onPush' | 'tls'>> &
    Pick<PublisherOptions, 'log' | 'onChange' | 'onPush' | 'tls'>;
  /** Something onChange should hear about happened during an attempt still under way. */
  #changed = false;
  #dispatcher: Agent | undefined;
  #caKey = '';
  /** The snapshot to run and its JSON, kept together: a push always sends the bytes of the hash it records. */
  #desired: Desired | null = null;
  #active = false;
  #resync: NodeJS.Timeout | null = null;

  constructor(opts: PublisherOptions) {
    this.#o = withDefaults(
      {
        timeoutMs: 5_000,
        resyncMs: 10_000,
        backoffMs: { base: 250, max: 30_000 },
        random: Math.random,
        now: Date.now,
        failingWarnMs: 60_000,
        maxBodyBytes: CONFIG_MAX_BYTES,
      },
      opts,
    );
  }

  /** The connection pool to the pods: a new one when the trusted CAs change (their file was rotated). */
  #pool(): Agent | undefined {
    const tls = this.#o.tls;
    if (tls === undefined) return undefined;
    const ca = typeof tls.ca === 'string' ? [tls.ca] : tls.ca();
    const key = ca.join('\n');
    if (this.#dispatcher === undefined || key !== this.#caKey) {
      void this.#dispatcher?.close();
      this.#caKey = key;
      this.#dispatcher = new Agent({
        connect: { ca: [...ca], ...(tls.serverName ? { servername: tls.serverName } : {}) },
      });
    }
    return this.#dispatcher;
  }

  get pods(): ReadonlyMap<string, PodState> {
    return this.#pods;
  }

  /** The snapshot to run, decoded again from the bytes pushed (GET /debug/config: rare). */
  get desired(): Snapshot | null {
    if (this.#desired === null) return null;
    const s = JSON.parse(gunzipSync(this.#desired.body).toString('utf8')) as Snapshot;
    unpackTable(s.table); // packed on the wire (config/wire.ts)
    return s;
  }

  /** Why the snapshot to run is not pushed to any pod; null when it is (or there is none). */
  get withheld(): string | null {
    return this.#desired?.withheld ?? null;
  }

  /** The size of what each push sends (sluice_controller_snapshot_bytes). */
  get desiredBytes(): number {
    return this.#desired?.bytes ?? 0;
  }

  /** Only an active publisher (the leader) talks to pods. */
  setActive(active: boolean): void {
    if (this.#active === active) return;
    this.#active = active;
    if (active) {
      this.#resync = setInterval(() => this.#all(true), this.#o.resyncMs);
      this.#resync.unref();
      this.#all(true, true);
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
      this.#pods.set(e.key, {
        endpoint: e,
        hash: null,
        rejected: null,
        failures: 0,
        failingSince: null,
        lastError: null,
        failingLong: false,
        inFlight: false,
        plainOnly: false,
      });
      changed = true;
      if (this.#active) this.#sync(e.key, true);
    }
    if (changed) this.#o.onChange?.();
  }

  /** Makes the attempt under way call onChange when it ends, even if it changes nothing. */
  callBackWhenSettled(): void {
    this.#changed = true;
  }

  /** `built`: the span of the build that made it (controller/tracing.ts), which its pushes link to. */
  publish(snapshot: Snapshot, built: SpanContext | null = null): void {
    if (this.#desired?.hash === snapshot.hash) return;
    const json = snapshotBody(snapshot);
    const bytes = json.length;
    // A data plane refuses a body over its limit (413; it counts the bytes decoded): sent anyway,
    // each pod would get it again and again with backoff, and the objects would wait "Pending"
    // with no reason given.
    const max = this.#o.maxBodyBytes;
    const withheld =
      bytes > max ? `the snapshot is ${mib(bytes)}, over the ${mib(max)} a data plane accepts` : null;
    if (withheld !== null)
      this.#o.log?.('warn', 'snapshot not pushed: too large', { hash: snapshot.hash, bytes, max });
    // Level 1: nine tenths of level 6's gain in under half its time (bench: 3.8 MB → 233 kB in 7 ms).
    const body = gzipSync(json, { level: 1 });
    this.#desired = { hash: snapshot.hash, body, bytes, built, withheld };
    if (this.#active) this.#all(false);
  }

  stop(): void {
    this.setActive(false);
    this.#dispatcher?.close().catch(() => {});
  }

  /** Every pod; `force` also those waiting out a backoff (a new leader asks everyone once). */
  #all(ask: boolean, force = false): void {
    for (const key of this.#pods.keys()) if (force || !this.#timers.has(key)) this.#sync(key, ask);
  }

  /** Brings one pod to the desired hash; `ask` first asks the pod what it runs. */
  #sync(key: string, ask: boolean): void {
    const pod = this.#pods.get(key);
    if (pod === undefined || pod.inFlight || !this.#active) return;
    clearTimeout(this.#timers.get(key));
    this.#timers.delete(key);
    pod.inFlight = true;
    const desired = this.#desired;
    const started = process.hrtime.bigint();
    this.#step(pod, ask, desired)
      .then(
        () => {
          if (pod.failures > 0) {
            this.#o.log?.('info', 'data-plane pod answers again', {
              pod: pod.endpoint.name,
              failures: pod.failures,
            });
            pod.failures = 0;
            pod.failingSince = null;
            pod.lastError = null;
            pod.failingLong = false;
            this.#changed = true;
          }
          // The desired snapshot moved on while this pod was being handled: go again.
          return this.#desired !== desired;
        },
        (err: Error) => {
          this.#o.onPush?.('error', Number(process.hrtime.bigint() - started) / 1e9);
          const error = describeError(err);
          if (pod.failures === 0 || error !== pod.lastError) {
            this.#o.log?.('warn', 'data-plane pod failing: retrying with backoff', {
              pod: pod.endpoint.name,
              err: error,
              failures: pod.failures + 1,
            });
            this.#changed = true;
          }
          pod.failures++;
          pod.failingSince ??= this.#o.now();
          pod.lastError = error;
          if (!pod.failingLong && this.#o.now() - pod.failingSince >= this.#o.failingWarnMs) {
            pod.failingLong = true;
            this.#o.log?.('warn', 'data-plane pod failing for long: a Warning on what waits for it', {
              pod: pod.endpoint.name,
              err: error,
              failures: pod.failures,
            });
            this.#changed = true;
          }
          if (this.#pods.get(key) !== pod) return false; // left the EndpointSlices meanwhile
          const { base, max } = this.#o.backoffMs;
          // Half fixed, half random ("equal jitter"): never sooner than half the step.
          const step = Math.min(base * 2 ** (pod.failures - 1), max);
          const t = setTimeout(() => this.#sync(key, true), step / 2 + (step / 2) * this.#o.random());
          t.unref();
          this.#timers.set(key, t);
          return false;
        },
      )
      .then((again) => {
        pod.inFlight = false;
        if (again && this.#pods.get(key) === pod) this.#sync(key, false);
        else if (this.#changed) {
          this.#changed = false;
          this.#o.onChange?.();
        }
      });
  }

  async #step(pod: PodState, ask: boolean, wanted: Desired | null): Promise<void> {
    if (ask || pod.hash === null) this.#report(pod, await this.#getHash(pod));
    if (wanted === null || wanted.withheld !== null) return;
    if (pod.hash === wanted.hash || pod.rejected?.hash === wanted.hash) return;
    const url = `${pod.endpoint.url}/config`;
    const gzipped = !pod.plainOnly;
    const span = startPushSpan(pod.endpoint.name, url, wanted.hash, wanted.built);
    const start = process.hrtime.bigint();
    let status = 0;
    let result: 'applied' | 'unchanged' | 'rejected' | 'error' = 'error';
    let failure: Error | undefined;
    try {
      const sent = gzipped ? wanted.body : gunzipSync(wanted.body);
      const pool = this.#pool();
      const put = (token: string | undefined) =>
        request(url, {
          method: 'PUT',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            ...(gzipped ? { 'content-encoding': 'gzip' } : {}),
          },
          body: sent,
          headersTimeout: this.#o.timeoutMs,
          bodyTimeout: this.#o.timeoutMs,
          dispatcher: pool,
        });
      const [newest, ...older] = tokenList(this.#o.token);
      let res = await put(newest);
      for (const token of older) {
        if (res.statusCode !== 401) break;
        await res.body.dump();
        res = await put(token);
      }
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
        this.#report(pod, wanted.hash, null);
      } else if (res.statusCode === 422) {
        result = 'rejected';
        this.#o.onPush?.('rejected', seconds);
        this.#report(pod, body.hash ?? pod.hash ?? '', { hash: wanted.hash, errors: body.errors ?? [] });
      } else if (gzipped && (res.statusCode === 415 || res.statusCode === 400)) {
        // A data plane older than gzip pushes reads the gzip bytes as JSON (400); one that does
        // not take gzip says 415. Either way: plain JSON from now on, at once (a rolling upgrade
        // of the data planes then loses no push).
        this.#o.log?.('info', 'data-plane pod takes no gzip: pushing it plain JSON', {
          pod: pod.endpoint.name,
          status: res.statusCode,
        });
        pod.plainOnly = true;
      } else throw new Error(`PUT /config answered ${res.statusCode}`);
    } catch (err) {
      failure = err as Error;
      throw err;
    } finally {
      endPushSpan(span, result, status, failure);
    }
    if (gzipped && pod.plainOnly) await this.#step(pod, false, wanted);
  }

  async #getHash(pod: PodState): Promise<string> {
    const res = await request(`${pod.endpoint.url}/config`, {
      headersTimeout: this.#o.timeoutMs,
      bodyTimeout: this.#o.timeoutMs,
      dispatcher: this.#pool(),
    });
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new Error(`GET /config answered ${res.statusCode}`);
    }
    // Whatever answers on the pod's address must say which snapshot it runs; anything else
    // (not JSON, no hash) is a failure like a refused connection, never a hash of undefined.
    const body = (await res.body.json().catch(() => null)) as { hash?: unknown } | null;
    if (typeof body?.hash !== 'string') throw new Error('GET /config answered no hash');
    return body.hash;
  }

  #report(pod: PodState, hash: string, rejected: PodState['rejected'] | undefined = undefined): void {
    const changed = pod.hash !== hash || (rejected !== undefined && pod.rejected?.hash !== rejected?.hash);
    pod.hash = hash;
    if (rejected !== undefined) pod.rejected = rejected;
    if (changed) this.#changed = true;
  }
}

/** What went wrong, as a status message can say it: "connection refused", "timed out", "PUT /config answered 500". */
export function describeError(err: Error): string {
  const code = (err as { code?: string }).code ?? (err.cause as { code?: string } | undefined)?.code;
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'connection reset';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return 'timed out';
    default:
      return err.message.slice(0, 200);
  }
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
