/**
 * A version's weighted canary: per request, `weight` percent go to the canary upstream. The
 * choice is made by the proxy handler, after the request hooks, so a sticky-by-consumer canary
 * sees the consumer authentication set. Sticky callers are placed by a hash of their consumer id
 * or cookie value (the same caller always lands on the same side while the weight stays);
 * everyone else by the proxy's one weighted choice (weighted.ts), the canary two backends
 * weighted 100 − weight and weight.
 */
import { cookieValue } from '../../upstream/balancer.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import type { Canary } from './manifest.ts';
import { weightedChooser } from './weighted.ts';

/** Returns true when this request goes to the canary. */
export function canaryChooser(canary: Canary): (ctx: RequestContext) => boolean {
  const { weight, sticky } = canary;
  const choose = weightedChooser([100 - weight, weight]);
  const split = () => choose() === 1;
  if (sticky === undefined) return split;
  const keyOf =
    'consumer' in sticky
      ? (ctx: RequestContext) => ctx.consumer?.id
      : // An empty value is no cookie: such a caller is split at random.
        (ctx: RequestContext) => cookieValue(ctx.headers.cookie, sticky.cookie) || undefined;
  return (ctx) => {
    const key = keyOf(ctx);
    return key === undefined ? split() : bucketOf(key) < weight;
  };
}

/** 0..99 from a 32-bit FNV-1a hash of the key: spread evenly enough for percentages. */
export function bucketOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  // FNV's low bits mix poorly for short keys: fold the high half in before taking the rest.
  h ^= h >>> 16;
  return (h >>> 0) % 100;
}
