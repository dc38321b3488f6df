/**
 * A miss on its way to the client: the response hook decides, on the upstream's headers,
 * whether it will be stored (so Cache-Status can say so before the head is written); the tap
 * then passes the body through as it comes, keeps it up to maxEntryBytes, and stores the entry
 * (policy built on the final headers) before the client's response ends, so a request that
 * waited for this miss finds it.
 */
import { Writable } from 'node:stream';
import CachePolicy from 'http-cache-semantics';
import type { RequestContext, ResponseTap } from '../../pipeline/context.ts';
import { afterDrain } from '../../pipeline/drain.ts';
import type { CacheStore } from '../../stores/cache-store.ts';
import { appendStatus, type Forward, fwdStatus } from './cache-status.ts';
import { consumerKey } from './key.ts';
import { policyRequest, type Storability, storability, storedHeaders, ttlMs } from './policy.ts';
import type { Settings } from './settings.ts';

export interface MissPlan {
  /** The shared key of the request (its URL for the policy). */
  shared: string;
  /** Why the request is forwarded: miss, vary-miss, request; method for a POST. */
  fwd: Forward;
  /** A POST's response is stored as the GET of its URI, when it may be (RFC 9110 §9.3.3). */
  post: boolean;
  /** The cache's own request (a revalidation): Cache-Status carries the upstream's status. */
  revalidation?: boolean;
}

export class Recorder implements ResponseTap {
  readonly #ctx: RequestContext;
  readonly #plan: MissPlan;
  readonly #s: Settings;
  readonly #store: CacheStore;
  readonly #log: (err: unknown) => void;
  #decision: Storability | null = null;

  constructor(
    ctx: RequestContext,
    plan: MissPlan,
    s: Settings,
    store: CacheStore,
    log: (err: unknown) => void,
  ) {
    this.#ctx = ctx;
    this.#plan = plan;
    this.#s = s;
    this.#store = store;
    this.#log = log;
  }

  /** The response will be stored (decided on the upstream's headers). */
  get storing(): boolean {
    return this.#decision?.store === true;
  }

  /** The response hook: decides on the upstream's headers and writes Cache-Status. */
  decide(status: number, headers: Record<string, string | string[]>): void {
    const d = this.#storability(status, headers);
    this.#decision = d;
    const member = fwdStatus(this.#plan.fwd, {
      ...(this.#plan.revalidation ? { status } : {}),
      stored: d.store,
      ...(d.store ? {} : { detail: d.why }),
    });
    appendStatus(headers, member);
  }

  start(status: number, headers: Record<string, string | string[]>, next: Writable): Writable {
    if (this.#decision === null || !this.#decision.store) return next;
    // The headers are final now (later response hooks have run): the entry keeps these.
    const d = this.#storability(status, headers);
    if (!d.store) return next;
    const ctx = this.#ctx;
    const key = d.shared ? this.#plan.shared : consumerKey(this.#plan.shared, ctx.consumer!.id);
    const policy = new CachePolicy(policyRequest(this.#plan.shared, ctx.req.headers), {
      status,
      headers: storedHeaders(headers),
    });
    const max = this.#s.maxEntryBytes;
    const store = this.#store;
    const ttl = ttlMs(policy, this.#s);
    const log = this.#log;
    const chunks: Buffer[] = [];
    let size = 0;
    const clientGone = () => next.destroyed || next.writableEnded;
    return new Writable({
      write(chunk: Buffer, _encoding, callback) {
        size += chunk.length;
        if (size <= max) chunks.push(chunk);
        else chunks.length = 0;
        if (clientGone() || next.write(chunk)) return callback();
        afterDrain(next, callback);
      },
      final(callback) {
        const end = () => {
          if (!clientGone()) next.end();
          callback();
        };
        if (size > max) return end();
        try {
          const r = store.set(key, { status, body: Buffer.concat(chunks, size), policy }, ttl);
          if (r instanceof Promise) r.catch(log).finally(end);
          else end();
        } catch (err) {
          log(err);
          end();
        }
      },
      destroy(err, callback) {
        if (err && !next.writableEnded) next.destroy();
        callback(err);
      },
    });
  }

  fail(): void {}

  #storability(status: number, headers: Record<string, string | string[]>): Storability {
    const ctx = this.#ctx;
    const req = ctx.req;
    if (this.#plan.post) {
      // The POST itself must allow storing (explicit freshness), and say which URI it is (Content-Location).
      const asPost = new CachePolicy(
        { url: this.#plan.shared, method: 'POST', headers: req.headers },
        { status, headers },
      );
      if (!asPost.storable()) return { store: false, why: 'uncacheable' };
      if (!sameResource(headers['content-location'], ctx))
        return { store: false, why: 'no-content-location' };
    }
    const policy = new CachePolicy(policyRequest(this.#plan.shared, req.headers), { status, headers });
    return storability(policy, headers, ctx.consumer !== null, this.#s);
  }
}

/**
 * Content-Location names the request's own URI (RFC 9110 §9.3.3: only then is a POST's response
 * its GET's): the path as the client sent it, or as the upstream got it (after the route's rewrite).
 */
function sameResource(location: string | string[] | undefined, ctx: RequestContext): boolean {
  if (typeof location !== 'string') return false;
  let url: URL;
  try {
    url = new URL(location, 'http://gateway.invalid');
  } catch {
    return false;
  }
  // The host is not compared: an upstream names its own origin, which the gateway maps to the route.
  const rewrite = ctx.route.rewritePath;
  const upstreamPath = rewrite === null ? ctx.path : rewrite(ctx.path);
  const search = ctx.query === '' ? '' : `?${ctx.query}`;
  return (url.pathname === ctx.path || url.pathname === upstreamPath) && url.search === search;
}
