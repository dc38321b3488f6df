/**
 * The order of the request path, following the spec's flow (§1.4): client → authentication →
 * rate limiting → transformation → cache → aggregation → backends → response transformation.
 * Each plugin declares its phase; the runtime sorts a route's plugins by this table once per
 * snapshot, never per request.
 */
export const PHASES = [
  'cors-preflight', //     answer browser preflights before asking for credentials
  'authenticate', //       identity first: rate limits and idempotency keys are scoped to the caller
  'rate-limit', //         refuse excess before spending anything else
  'transform-request', //  headers (e.g. X-Gateway-Version), query, body
  'cache', //              safe methods only, per Cache-Control; a hit ends the chain
  'idempotency', //        just before the upstream: a replay must never reach the backend
  'upstream', //           the route's handler: proxy (aggregation, gRPC, SOAP later)
  'transform-response', // headers and body on the way back; CORS response headers
] as const;

export type Phase = (typeof PHASES)[number];

export const phaseIndex = (p: Phase): number => PHASES.indexOf(p);
