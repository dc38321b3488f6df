/**
 * Forwarding with a stored response in hand (RFC 9111 §4.3): the cache's own request to the
 * upstream through the route's handler (its pool, timeouts, retries and breaker), with the
 * stored response's validators (If-None-Match / If-Modified-Since) in place of the client's.
 *   304          → the stored body with the 304's headers, stored again (fwd=stale; fwd-status=304)
 *   5xx / failed → within stale-if-error, the stale entry (detail=stale-if-error); else the error
 *   anything else→ the new response, to the client as it streams and stored like a miss
 * In the background (stale-while-revalidate) the same request only refreshes the store.
 * Conditional headers are the cache's: a client's own If-None-Match is answered from what is
 * served (serve.ts), so a 304 from the upstream always means "the stored response is good".
 */
import { Writable } from 'node:stream';
import type CachePolicy from 'http-cache-semantics';
import { answerProblem } from '../../pipeline/answer.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import type { CacheMetrics } from './metrics.ts';
import { finishRequest } from '../../pipeline/finish.ts';
import type { CacheEntry, CacheStore } from '../../stores/cache-store.ts';
import type { CallFailure, ResponseSink } from '../../upstream/call.ts';
import { type Forward, fwdStatus } from './cache-status.ts';
import {
  conditionalHeaders,
  policyRequest,
  staleAllowance,
  staleSeconds,
  storedHeaders,
  ttlMs,
} from './policy.ts';
import { Recorder } from './record.ts';
import { serveEntry } from './serve.ts';
import type { Settings } from './settings.ts';

export interface Stored {
  entry: CacheEntry;
  /** Where it is stored (the caller's key or the shared one). */
  key: string;
  /** The request's shared key (the policy's URL). */
  shared: string;
  fwd: Forward;
}

const CONDITIONALS = ['if-none-match', 'if-modified-since', 'if-match', 'if-unmodified-since', 'if-range'];

const DISCARD = () =>
  new Writable({
    write(_chunk, _encoding, callback) {
      callback();
    },
  });

export interface Context {
  s: Settings;
  store: CacheStore;
  log: (err: unknown) => void;
  metrics: CacheMetrics;
}

/** Answers the request by revalidating `stored` with the upstream (the chain ends here). */
export function revalidate(ctx: RequestContext, stored: Stored, c: Context): Promise<void> {
  ctx.done = true;
  return call(ctx, stored, c, true);
}

/** stale-while-revalidate: the client has its (stale) answer; this refreshes the entry. */
export function refreshInBackground(ctx: RequestContext, stored: Stored, c: Context): Promise<void> {
  return call(ctx, stored, c, false);
}

function call(ctx: RequestContext, stored: Stored, c: Context, foreground: boolean): Promise<void> {
  const h = ctx.headers;
  for (const name of CONDITIONALS) delete h[name];
  const v = conditionalHeaders(stored.entry.policy);
  if (v.etag !== undefined) h['if-none-match'] = v.etag;
  if (v.lastModified !== undefined) h['if-modified-since'] = v.lastModified;
  return new Promise((resolve) => {
    ctx.route.handler.call(ctx, new RevalidationSink(ctx, stored, c, foreground, resolve));
  });
}

class RevalidationSink implements ResponseSink {
  readonly #ctx: RequestContext;
  readonly #stored: Stored;
  readonly #c: Context;
  readonly #foreground: boolean;
  readonly #resolve: () => void;
  /** What the client got: nothing yet, the entry, or the upstream's response streaming. */
  #answer: 'none' | 'entry' | 'stream' = 'none';

  constructor(ctx: RequestContext, stored: Stored, c: Context, foreground: boolean, resolve: () => void) {
    this.#ctx = ctx;
    this.#stored = stored;
    this.#c = c;
    this.#foreground = foreground;
    this.#resolve = resolve;
  }

  response(status: number, headers: Record<string, string | string[]>): Writable {
    const ctx = this.#ctx;
    const { entry, key } = this.#stored;
    ctx.status = status;
    if (status === 304) {
      const req = policyRequest(this.#stored.shared, ctx.req.headers);
      const r = entry.policy.revalidatedPolicy(req, { status, headers: storedHeaders(headers) });
      if (!r.modified) {
        const fresh: CacheEntry = { status: entry.status, body: entry.body, policy: r.policy };
        this.#put(key, fresh, r.policy);
        this.#serve(fresh, fwdStatus(this.#stored.fwd, { status: 304, stored: true }));
        return DISCARD();
      }
      // A 304 that matches no validator of ours (an upstream bug) is passed on as it is, below.
    }
    if (status >= 500 && this.#staleIfError()) {
      this.#serveStaleIfError(fwdStatus('stale', { status, detail: 'stale-if-error' }));
      return DISCARD();
    }
    // A new response, stored like a miss (our response hook decides, seeing the Recorder among
    // the taps), streamed to the client; in the background, only stored.
    const plan = { shared: this.#stored.shared, fwd: this.#stored.fwd, post: false, revalidation: true };
    const recorder = new Recorder(ctx, plan, this.#c.s, this.#c.store, this.#c.log);
    ctx.addTap(recorder);
    const hooks = ctx.route.responseHooks;
    if (hooks !== null) for (const hook of hooks) hook(ctx, headers);
    if (!this.#foreground) return recorder.start(status, headers, DISCARD());
    this.#answer = 'stream';
    if (ctx.responseHeaders !== null) Object.assign(headers, ctx.responseHeaders);
    headers['x-request-id'] = ctx.requestId;
    let body: Writable = ctx.res;
    for (const tap of ctx.taps!) body = tap.start(status, headers, body);
    ctx.res.writeHead(status, headers);
    return body;
  }

  end(failure: CallFailure | null): void {
    const ctx = this.#ctx;
    this.#resolve();
    if (!this.#foreground) return;
    if (failure === null) {
      if (this.#answer === 'stream') finishRequest(ctx, null);
      return;
    }
    if (this.#answer === 'none' && this.#staleIfError()) {
      this.#serveStaleIfError(fwdStatus('stale', { detail: 'stale-if-error' }));
      return;
    }
    if (this.#answer === 'none') {
      answerProblem(ctx, failure.code);
      return;
    }
    if (this.#answer === 'stream') {
      const taps = ctx.taps;
      if (taps !== null) for (const tap of taps) tap.fail(failure.sent);
      ctx.res.destroy();
      finishRequest(ctx, failure.code);
    }
  }

  #staleIfError(): boolean {
    const policy = this.#stored.entry.policy;
    return staleSeconds(policy) < staleAllowance(policy, 'stale-if-error', this.#c.s.maxSieS);
  }

  #serveStaleIfError(cacheStatus: string): void {
    if (this.#foreground) this.#c.metrics.count(this.#ctx.route.id, 'stale_if_error');
    this.#serve(this.#stored.entry, cacheStatus);
  }

  #serve(entry: CacheEntry, cacheStatus: string): void {
    if (!this.#foreground) return;
    this.#answer = 'entry';
    serveEntry(this.#ctx, entry, cacheStatus);
  }

  #put(key: string, entry: CacheEntry, policy: CachePolicy): void {
    try {
      const r = this.#c.store.set(key, entry, ttlMs(policy, this.#c.s));
      if (r instanceof Promise) r.catch(this.#c.log);
    } catch (err) {
      this.#c.log(err);
    }
  }
}
