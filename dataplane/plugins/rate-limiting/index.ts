/**
 * rate-limiting: requests allowed per second / minute / hour / day, per consumer (or credential,
 * IP, header), per path of a route or per service, each plugin its own count. Over the limit: 429 problem+json with Retry-After.
 * Every response of the route carries RateLimit-Policy and RateLimit (IETF httpapi draft: the
 * policies, then the one closest to its limit). `local` counts in this process, synchronously;
 * `redis` counts across replicas with one atomic call (or, with `syncMs`, decides in this process
 * and syncs its counts with Redis every syncMs), and when Redis cannot answer either counts
 * locally at limit ÷ replicas (failMode open) or answers 503 (closed).
 */
import { traced } from '../../observability/tracing.ts';
import { WINDOWS } from './manifest.ts';
import { answerProblem } from '../../pipeline/answer.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import type { RuntimeDeps } from '../../pipeline/route.ts';
import type {
  Decision,
  MemoryRateLimitStore,
  RateLimitStore,
  Window,
} from '../../stores/rate-limit-store.ts';
import { StoreHealth } from '../../stores/store-health.ts';
import { definePlugin } from '../types.ts';
import { bucketOf, callerOf, countedWhere } from './bucket.ts';
import { manifest } from './manifest.ts';
import { RATE_LIMIT_METRICS, type RateLimitMetrics } from './metrics.ts';
import { type HitOutcomes, WaitingHit } from './waiting-hit.ts';
import { LOCAL_COUNTERS, SHARED_COUNTERS, SYNCED_COUNTERS } from './store.ts';

const BUCKET_CACHE = 10_000;
const NAMES = Object.keys(WINDOWS) as (keyof typeof WINDOWS)[];

const HIT_SPAN = { 'sluice.store': 'rate-limit', 'db.system.name': 'redis', 'db.operation.name': 'hit' };

export default definePlugin(manifest, {
  metrics: [RATE_LIMIT_METRICS],
  stores: [LOCAL_COUNTERS, SHARED_COUNTERS, SYNCED_COUNTERS],
  create(config, deps, self) {
    const m = deps.metrics.of(RATE_LIMIT_METRICS);
    const windows: Window[] = NAMES.filter((n) => config[n] !== undefined).map((n) => ({
      seconds: WINDOWS[n],
      limit: config[n]!,
    }));
    // validateRouteTable has checked the config (checkRateLimitingConfig): at least one window.
    const names = NAMES.filter((n) => config[n] !== undefined);
    const fallback = windows.map((w) => ({
      ...w,
      limit: Math.max(1, Math.floor(w.limit / deps.limits.replicasHint)),
    }));
    const policyHeader = windows.map((w, i) => `"${names[i]}";q=${w.limit};w=${w.seconds}`).join(', ');
    const s = {
      redis: config.policy === 'redis',
      failOpen: config.failMode !== 'closed',
      limitBy: config.limitBy ?? 'consumer',
      header: config.header?.toLowerCase(),
      service: config.scope === 'service',
      headers: !config.hideHeaders,
      syncMs: config.syncMs,
    };
    const local = deps.stores.of(LOCAL_COUNTERS);
    const store: RateLimitStore = deps.stores.of(SHARED_COUNTERS);
    const synced = deps.stores.of(SYNCED_COUNTERS);
    // Logged once when the store starts failing and once when it answers again, never per request
    // (the metric counts each fallback or 503).
    const health = new StoreHealth('rate limit store');
    const outcomes: HitOutcomes = {
      answered(ctx, d) {
        health.answered(deps.log, { route: ctx.route.id });
        decide(ctx, d);
      },
      unavailable: (ctx, err, bucket) =>
        unavailable(ctx, err, bucket, s.failOpen, fallback, local, m, deps, decide, health),
    };

    const decide = (ctx: RequestContext, d: Decision): void => {
      // The window closest to its limit speaks for the response.
      let tight = 0;
      for (let i = 1; i < windows.length; i++)
        if (windows[i].limit - d.counts[i] < windows[tight].limit - d.counts[tight]) tight = i;
      const remaining = Math.max(0, windows[tight].limit - d.counts[tight]);
      const state = `"${names[tight]}";r=${remaining};t=${d.resets[tight]}`;
      if (d.allowed) {
        m.request(ctx, 'allowed');
        if (s.headers) {
          ctx.responseHeaders ??= {};
          ctx.responseHeaders['ratelimit-policy'] = policyHeader;
          ctx.responseHeaders.ratelimit = state;
        }
        return;
      }
      // Retry when every full window has reset; refused on a replica's share between syncs
      // (syncMs), no window is full: in a second.
      let wait = 0;
      for (let i = 0; i < windows.length; i++)
        if (d.counts[i] >= windows[i].limit) wait = Math.max(wait, d.resets[i]);
      if (wait === 0) wait = 1;
      m.request(ctx, 'limited');
      answerProblem(ctx, 'SLC_ERR_RATE_LIMITED', {
        detail: `limit of ${windows[tight].limit} per ${names[tight]} reached`,
        headers: s.headers
          ? { 'ratelimit-policy': policyHeader, ratelimit: state, 'retry-after': String(wait) }
          : { 'retry-after': String(wait) },
      });
    };

    return {
      bind(route) {
        // By plugin too: one count shared by two rate-limiting plugins on a route took each
        // request twice (two limits of 10 admitted 5).
        const where = countedWhere(route, self.id, s.service);
        // Optimization: a caller's bucket is hashed once, not per request (a sha256 is ~1 µs);
        // bounded: cleared when it holds BUCKET_CACHE callers.
        const buckets = new Map<string, string>();
        return {
          onRequest(ctx: RequestContext) {
            const who = callerOf(ctx, s.limitBy, s.header);
            let bucket = buckets.get(who);
            if (bucket === undefined) {
              bucket = bucketOf(where, who);
              if (buckets.size >= BUCKET_CACHE) buckets.clear();
              buckets.set(who, bucket);
            }
            if (!s.redis) return decide(ctx, local.hit(bucket, windows));
            if (s.syncMs !== undefined) {
              let d: Decision;
              try {
                d = synced.hit(bucket, windows, s.syncMs, deps.limits.replicasHint);
              } catch (err) {
                return outcomes.unavailable(ctx, err, bucket);
              }
              return outcomes.answered(ctx, d);
            }
            if (ctx.span === null) {
              const waiting = new WaitingHit(ctx, bucket, outcomes);
              // Without Redis (standalone), the shared counters are this process's: decided now.
              const now = store.hit(bucket, windows, waiting);
              return now === undefined ? waiting : outcomes.answered(ctx, now);
            }
            // Traced: the hit is a span, which ends with a promise.
            const pending = new Promise<Decision>((resolve, reject) => {
              const now = store.hit(bucket, windows, { decided: resolve, failed: reject });
              if (now !== undefined) resolve(now);
            });
            return traced(ctx.span, 'rate-limit hit', HIT_SPAN, pending).then(
              (d) => outcomes.answered(ctx, d),
              (err) => outcomes.unavailable(ctx, err, bucket),
            );
          },
        };
      },
    };
  },
});

function unavailable(
  ctx: RequestContext,
  err: unknown,
  bucket: string,
  failOpen: boolean,
  fallback: Window[],
  local: MemoryRateLimitStore,
  m: RateLimitMetrics,
  deps: RuntimeDeps,
  decide: (ctx: RequestContext, d: Decision) => void,
  health: StoreHealth,
): void {
  health.failed(deps.log, { route: ctx.route.id, failMode: failOpen ? 'open' : 'closed' }, err);
  if (!failOpen) {
    m.request(ctx, 'unavailable');
    answerProblem(ctx, 'SLC_ERR_RATE_LIMIT_UNAVAILABLE', { headers: { 'retry-after': '1' } });
    return;
  }
  m.request(ctx, 'fallback');
  decide(ctx, local.hit(`fallback\n${bucket}`, fallback));
}
