/**
 * Request mirrors (Gateway API's RequestMirror): a copy of the request goes to each mirror
 * upstream picked for it, fire and forget. The copy's response is read and discarded, its
 * failure is nobody's; the client's request neither waits for it nor changes with it (the copy
 * is made before the main call, from the same headers and body, and never carries the client's
 * abort signal: a mirror may outlive the client, bounded by its own upstream's timeouts).
 *
 * Bounded: at most MAX_IN_FLIGHT copies per process are under way at once; past that a copy is
 * dropped (counted), so a slow or dead mirror cannot pile up sockets and bodies while traffic
 * flows. Bodies: a route with mirrors reads the request body whole first (the proxy manifest's
 * needs.requestBody, within the body limit), so every copy and the main call send the same bytes.
 * A share of the requests is mirrored by the proxy's one weighted choice (weighted.ts): exact
 * within a few requests.
 */
import { Writable } from 'node:stream';
import { metricSet } from '../../observability/metric-set.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { callUpstream, type ResponseSink } from '../../upstream/call.ts';
import { h2cRequestHeaders } from '../../upstream/h2c-headers.ts';
import type { UpstreamRuntime } from '../../upstream/pools.ts';
import type { Mirror } from './manifest.ts';
import { weightedChooser } from './weighted.ts';

/** Copies under way at once, per process (each holds a socket and, at most, one body). */
export const MAX_IN_FLIGHT = 128;
let inFlight = 0;

export const MIRROR_METRICS = metricSet('mirrors', (host) => {
  const copies = host.routeCounter({
    name: 'sluice_mirror_requests_total',
    help:
      'Request copies sent to mirrors, by route id and outcome: sent (answered, any status), failed (no answer: ' +
      'connect failure, timeout), dropped (too many copies under way; not sent).',
    labelNames: ['route', 'outcome'] as const,
  });
  return (route: string, outcome: 'sent' | 'failed' | 'dropped'): void => copies.series(route, outcome).inc();
});

/** Reads the copy's answer and lets it go. */
class DiscardSink implements ResponseSink {
  readonly #done: (failed: boolean) => void;
  constructor(done: (failed: boolean) => void) {
    this.#done = done;
  }
  response(): Writable {
    return new Writable({ write: (_chunk, _enc, next) => next() });
  }
  end(failure: unknown): void {
    this.#done(failure !== null);
  }
}

export interface BoundMirror {
  up: UpstreamRuntime;
  /** Whether this request is copied to it (null: every one). */
  pick: (() => boolean) | null;
}

export function bindMirrors(
  mirrors: readonly Mirror[],
  upstream: (id: string) => UpstreamRuntime,
): BoundMirror[] {
  return mirrors.map((m) => {
    const f = m.fraction;
    if (f === undefined || f.numerator >= f.denominator) return { up: upstream(m.upstream), pick: null };
    const choose = weightedChooser([f.numerator, f.denominator - f.numerator]);
    return { up: upstream(m.upstream), pick: () => choose() === 0 };
  });
}

/** Sends the copies of one request (its path as the main call sends it, after the route's edits). */
export function sendMirrors(
  ctx: RequestContext,
  mirrors: readonly BoundMirror[],
  path: (up: UpstreamRuntime) => string,
  count: (route: string, outcome: 'sent' | 'failed' | 'dropped') => void,
): void {
  // The route reads bodies whole (needs.requestBody); a body it could not hold is not copied.
  if (ctx.hasBody && ctx.body === null) return;
  for (const m of mirrors) {
    if (m.pick !== null && !m.pick()) continue;
    if (inFlight >= MAX_IN_FLIGHT) {
      count(ctx.route.id, 'dropped');
      continue;
    }
    inFlight++;
    const sink = new DiscardSink((failed) => {
      inFlight--;
      count(ctx.route.id, failed ? 'failed' : 'sent');
    });
    callUpstream(
      m.up,
      {
        path: path(m.up),
        method: ctx.method,
        headers: m.up.h2c ? h2cRequestHeaders(ctx.headers, ctx.teTrailers) : { ...ctx.headers },
        body: ctx.body,
        keyed: false,
      },
      sink,
      ctx.route.deps.metrics,
    );
  }
}
