/**
 * proxy-cache: an RFC 9111 shared cache (http-cache-semantics) in the cache phase, after
 * authentication (the consumer is known) and before idempotency. Per request of a cached method:
 *   look the key up (memory: synchronously; Redis: one MGET of the caller's key and the shared one)
 *     fresh                        → answered from the entry (hit); the chain ends
 *     stale, stale-while-revalidate→ answered from the entry; one background request refreshes it
 *     stale / not for this request → revalidated with the upstream (revalidate.ts)
 *     nothing                      → forwarded; the response is stored on its way (record.ts)
 * Concurrent misses for one key make one upstream call (coalesce.ts). Headers that change what a
 * back end serves but are not in the key are removed first (override-headers.ts).
 * The store failing is a bypass (fwd=bypass), never an error: the cache is an optimisation.
 */
import type { RequestContext } from '../../pipeline/context.ts';
import type { RuntimeDeps } from '../../pipeline/route.ts';
import type { CacheEntry, CacheStore } from '../../stores/cache-store.ts';
import { definePlugin } from '../types.ts';
import { type Forward, fwdStatus, hitStatus, staleHitStatus } from './cache-status.ts';
import { Coalescer } from './coalesce.ts';
import { requestHost, requestKeys } from './key.ts';
import { manifest } from './manifest.ts';
import { stripOverrides } from './override-headers.ts';
import { policyRequest, staleAllowance, staleSeconds } from './policy.ts';
import { Recorder } from './record.ts';
import { type Context, refreshInBackground, revalidate } from './revalidate.ts';
import { serveEntry } from './serve.ts';
import { CACHE_METRICS } from './metrics.ts';
import { compileSettings, type Settings } from './settings.ts';
import { CACHE } from './store.ts';

const METHOD = fwdStatus('method');
const BYPASS = fwdStatus('bypass', { detail: 'store-unavailable' });

export default definePlugin(manifest, {
  metrics: [CACHE_METRICS],
  stores: [CACHE],
  create(config, deps) {
    const s = compileSettings(config);
    const stores = deps.stores.of(CACHE);
    const redis = stores.redis;
    if (s.store === 'redis' && redis !== null) return new Cache(s, redis, deps);
    if (s.store === 'redis')
      deps.log.warn(
        'proxy-cache: store "redis" but the data plane runs without --redis: using a memory store',
      );
    const held = stores.acquireMemory(s.memoryMaxBytes);
    return new Cache(s, held.store, deps, held.release);
  },
});

class Cache {
  readonly #s: Settings;
  readonly #store: CacheStore;
  readonly #deps: RuntimeDeps;
  readonly #c: Context;
  readonly #release: () => void;
  /** Concurrent misses and revalidations of one key: one upstream call. */
  readonly #misses: Coalescer;
  /** Keys with a background refresh running (stale-while-revalidate: one at a time). */
  readonly #refreshing = new Set<string>();
  #lastWarn = 0;
  readonly hooks;

  constructor(s: Settings, store: CacheStore, deps: RuntimeDeps, release: () => void = () => {}) {
    this.#s = s;
    this.#store = store;
    this.#deps = deps;
    this.#release = release;
    this.#c = { s, store, log: (err) => this.#warn(err), metrics: deps.metrics.of(CACHE_METRICS) };
    this.#misses = new Coalescer(s, store, (err) => this.#warn(err));
    this.hooks = {
      onRequest: (ctx: RequestContext) => this.#onRequest(ctx),
      onResponse: (ctx: RequestContext, headers: Record<string, string | string[]>) => {
        const taps = ctx.taps;
        if (taps !== null)
          for (const t of taps) if (t instanceof Recorder) return t.decide(ctx.status, headers);
      },
    };
  }

  bind() {
    return this.hooks;
  }

  close(): void {
    this.#release();
  }

  #onRequest(ctx: RequestContext): void | Promise<void> {
    const m = ctx.method;
    // What the cache answers or stores from must not depend on headers outside its key.
    if (m === 'GET' || m === 'HEAD' || (m === 'POST' && this.#s.post))
      stripOverrides(ctx.headers, this.#s.stripHeaders, requestHost(ctx));
    if (m === 'GET' || (m === 'HEAD' && this.#s.head)) return this.#lookup(ctx, false);
    this.#c.metrics.request(ctx, 'method');
    if (m === 'OPTIONS' || m === 'TRACE') return setStatus(ctx, METHOD);
    // An unsafe method: its success invalidates the entries of its URI (RFC 9111 §4.4), those
    // this request's keys name (the shared one, the caller's); other callers' private entries
    // and other variants run out by their own freshness.
    const keys = requestKeys(ctx, this.#s.varyHeaders);
    let recorder: Recorder | null = null;
    if (m === 'POST' && this.#s.post) {
      const plan = { shared: keys[keys.length - 1], fwd: 'method' as const, post: true };
      recorder = new Recorder(ctx, plan, this.#s, this.#store, this.#c.log);
      ctx.addTap(recorder);
    } else setStatus(ctx, METHOD);
    ctx.res.once('finish', () => {
      const status = ctx.status;
      if (status < 200 || status >= 400 || recorder?.storing) return;
      try {
        const r = this.#store.delete(keys);
        if (r instanceof Promise) r.catch((err) => this.#warn(err));
      } catch (err) {
        this.#warn(err);
      }
    });
  }

  #lookup(ctx: RequestContext, waited: boolean): void | Promise<void> {
    const keys = requestKeys(ctx, this.#s.varyHeaders);
    let got: CacheEntry | null | Promise<CacheEntry | null>;
    try {
      got = this.#store.get(keys);
    } catch (err) {
      return this.#bypass(ctx, err);
    }
    if (got instanceof Promise)
      return got.then(
        (entry) => this.#found(ctx, keys, entry, waited),
        (err) => this.#bypass(ctx, err),
      );
    return this.#found(ctx, keys, got, waited);
  }

  #found(
    ctx: RequestContext,
    keys: string[],
    entry: CacheEntry | null,
    waited: boolean,
  ): void | Promise<void> {
    const shared = keys[keys.length - 1];
    if (entry !== null) {
      const policy = entry.policy;
      const ev = policy.evaluateRequest(policyRequest(shared, ctx.req.headers));
      if (ev.response !== undefined) {
        const headers = ev.response.headers as Record<string, string>;
        if (ev.revalidation === undefined) {
          this.#c.metrics.request(ctx, 'hit');
          return serveEntry(ctx, entry, hitStatus(policy.maxAge() - policy.age()), headers);
        }
        const stale = staleSeconds(policy);
        if (stale < staleAllowance(policy, 'stale-while-revalidate', this.#s.maxSwrS)) {
          this.#c.metrics.request(ctx, 'stale');
          serveEntry(ctx, entry, staleHitStatus(stale), headers);
          if (ctx.method === 'GET') this.#refresh(ctx, { entry, key: keys[0], shared, fwd: 'stale' });
          return;
        }
      }
    }
    if (ctx.method === 'HEAD') {
      // A HEAD's response has no body to store: it is forwarded, and GET fills the cache.
      this.#c.metrics.request(ctx, 'miss');
      return setStatus(ctx, fwdStatus(entry === null ? 'miss' : why(ctx, entry)));
    }
    if (!waited && this.#s.lockWaitMs > 0) {
      const misses = this.#misses;
      const pending = misses.pending(keys[0]);
      if (pending !== undefined) return misses.wait(pending).then(() => this.#lookup(ctx, true));
      misses.lead(ctx, keys[0]);
      if (this.#store.kind === 'redis') {
        const request = policyRequest(shared, ctx.req.headers);
        return misses
          .acquire(ctx, keys, (e) => e.policy.evaluateRequest(request).response !== undefined)
          .then(
            (found) =>
              found === null ? this.#forward(ctx, keys, entry) : this.#found(ctx, keys, found, true),
            (err) => this.#bypass(ctx, err),
          );
      }
    }
    return this.#forward(ctx, keys, entry);
  }

  /** To the upstream: a plain miss through the chain, or a revalidation of the entry in hand. */
  #forward(ctx: RequestContext, keys: string[], entry: CacheEntry | null): void | Promise<void> {
    const shared = keys[keys.length - 1];
    this.#c.metrics.request(ctx, entry === null ? 'miss' : 'revalidate');
    if (entry === null) {
      ctx.addTap(new Recorder(ctx, { shared, fwd: 'miss', post: false }, this.#s, this.#store, this.#c.log));
      return;
    }
    return revalidate(ctx, { entry, key: keys[0], shared, fwd: why(ctx, entry) }, this.#c);
  }

  #refresh(ctx: RequestContext, stored: Parameters<typeof refreshInBackground>[1]): void {
    if (this.#refreshing.has(stored.key)) return;
    this.#refreshing.add(stored.key);
    const task = refreshInBackground(ctx, stored, this.#c).finally(() => this.#refreshing.delete(stored.key));
    this.#deps.background.run(task);
  }

  #bypass(ctx: RequestContext, err: unknown): void {
    this.#warn(err);
    this.#c.metrics.request(ctx, 'bypass');
    setStatus(ctx, BYPASS);
  }

  /** Store failures, logged at most every 10 s (Redis down would log every request); counted by the store metrics. */
  #warn(err: unknown): void {
    const now = Date.now();
    if (now - this.#lastWarn < 10_000) return;
    this.#lastWarn = now;
    this.#deps.log.warn(
      { err: err instanceof Error ? err.message : String(err) },
      'proxy-cache store unavailable: bypassing',
    );
  }
}

/** Why an entry in hand could not answer: stale (or must-revalidate), the client's directives, or another variant. */
function why(ctx: RequestContext, entry: CacheEntry): Forward {
  const h = ctx.req.headers;
  if (
    entry.policy.stale() ||
    /must-revalidate/i.test(String(entry.policy.responseHeaders()['cache-control'] ?? ''))
  )
    return 'stale';
  if (h['cache-control'] !== undefined || h.pragma !== undefined) return 'request';
  return 'vary-miss';
}

function setStatus(ctx: RequestContext, value: string): void {
  if (ctx.responseHeaders === null) ctx.responseHeaders = { 'cache-status': value };
  else ctx.responseHeaders['cache-status'] = value;
}
