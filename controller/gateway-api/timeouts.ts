/**
 * HTTPRoute rule `timeouts` as the upstream timeouts a GatewayRoute writes in spec.service.timeouts
 * (one compile of them: controller/compile/resolve-upstreams.ts): `request` is the overall
 * deadline (timeouts.request: until the response headers, retries included; past it 504),
 * `backendRequest` the time one try may wait for the back end's response headers
 * (timeouts.response; past it 504). "0s" disables either: no overall deadline, and a try waits
 * as long as a timer can (the default would otherwise be 60s). Durations are Gateway API's
 * ("500ms", "1h30m"), which parseDuration reads; out of range is refused (UnsupportedValue).
 */
import { MAX_TIMEOUT_MS, parseDuration } from '../../dataplane/config/duration.ts';
import type { Timeouts } from '../api/gateway-route.ts';
import type { HTTPRouteRule } from '../api/gateway-api.ts';

const FIELDS = [
  ['request', 'request'],
  ['backendRequest', 'response'],
] as const;

/** Why the rule's timeouts cannot be served (its field first), or undefined. */
export function timeoutsProblem(rule: HTTPRouteRule): string | undefined {
  for (const [field] of FIELDS) {
    const text = rule.timeouts?.[field];
    if (text === undefined) continue;
    const ms = parseDuration(text);
    if (ms === undefined || ms > MAX_TIMEOUT_MS)
      return `timeouts.${field}: ${JSON.stringify(text)} is not a duration of at most 596h`;
  }
  return undefined;
}

/** The rule's timeouts as spec.service.timeouts, or undefined without any. */
export function timeoutsOf(rule: HTTPRouteRule): Timeouts | undefined {
  if (rule.timeouts === undefined || timeoutsProblem(rule)) return undefined;
  const out: Timeouts = {};
  for (const [field, ours] of FIELDS) {
    const text = rule.timeouts[field];
    if (text === undefined) continue;
    const off = parseDuration(text) === 0;
    if (off && ours === 'response') out.response = `${MAX_TIMEOUT_MS}ms`;
    else if (!off) out[ours] = text;
  }
  return Object.keys(out).length ? out : undefined;
}
