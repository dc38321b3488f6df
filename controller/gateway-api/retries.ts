/**
 * HTTPRoute rule `retry` (Gateway API's experimental channel: the standard CRDs prune it, so only
 * clusters with the experimental HTTPRoute CRD ever send it) as the retries a GatewayRoute writes
 * in spec.service.retries (one compile of them: controller/compile/resolve-upstreams.ts):
 * `attempts` retries after the first try (1 when unset, at most 10), `codes` the statuses
 * retried (5xx only; none listed: only connection failures), `backoff` the base of the waits
 * between tries. Sluice's retry rules hold as for a GatewayRoute: idempotent methods only, within
 * the retry budget, and waits with full jitter (a random wait up to the base, doubling each try,
 * capped at 250ms or the base if longer), so a wait may be shorter than `backoff`, which the spec
 * calls a minimum. What does not fit is refused (UnsupportedValue) rather than served otherwise.
 */
import { MAX_TIMEOUT_MS, parseDuration } from '../../dataplane/config/duration.ts';
import type { Retries } from '../api/gateway-route.ts';
import type { HTTPRouteRule } from '../api/gateway-api.ts';

const MAX_ATTEMPTS = 10;
/** The longest wait between tries when only the first is given (GatewayRoute's default). */
const DEFAULT_MAX_BACKOFF_MS = 250;

/** `backoff` as the base, and the cap at least that (the default cap would cut a longer one short); "0s": the default. */
function backoffOf(text: string | undefined): Retries['backoff'] {
  const ms = text === undefined ? 0 : parseDuration(text)!;
  if (ms === 0) return undefined;
  return { base: text, ...(ms > DEFAULT_MAX_BACKOFF_MS && { max: text }) };
}

/** Why the rule's retry cannot be served (its field first), or undefined. */
export function retryProblem(rule: HTTPRouteRule): string | undefined {
  const r = rule.retry;
  if (r === undefined) return undefined;
  if (r.attempts !== undefined && (r.attempts < 1 || r.attempts > MAX_ATTEMPTS))
    return `retry.attempts: ${r.attempts} (1 to ${MAX_ATTEMPTS} are served)`;
  const code = r.codes?.find((c) => c < 500 || c > 599);
  if (code !== undefined) return `retry.codes: ${code} (only 5xx statuses are retried)`;
  const backoff = r.backoff === undefined ? 0 : parseDuration(r.backoff);
  if (backoff === undefined || backoff > MAX_TIMEOUT_MS)
    return `retry.backoff: ${JSON.stringify(r.backoff)} is not a duration of at most 596h`;
  return undefined;
}

/** The rule's retry as spec.service.retries, or undefined without one. */
export function retriesOf(rule: HTTPRouteRule): Retries | undefined {
  const r = rule.retry;
  if (r === undefined || retryProblem(rule)) return undefined;
  return {
    attempts: r.attempts ?? 1,
    statuses: [...new Set(r.codes ?? [])].sort((a, b) => a - b),
    ...(backoffOf(r.backoff) && { backoff: backoffOf(r.backoff) }),
  };
}
