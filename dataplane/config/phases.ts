/**
 * The order of the request path, following the spec's flow (§1.4): client → authentication →
 * rate limiting → transformation → cache → aggregation → backends → response transformation.
 * Each plugin declares its phase, and so does each built-in step (runtime/builtin-steps.ts); the
 * runtime sorts a route's steps by this table once per snapshot, never per request. A step's
 * request hook runs in its phase's place on the way in, its response hook in the same place on
 * the way back.
 */
export const PHASES = [
  'redirect', //           built-in: cleartext answered 308 to https before anything else runs, not even a preflight or authentication
  'version', //            built-in: a deprecated version's headers on every answer, the gateway's own included; 410 past its sunset
  'cors-preflight', //     answer browser preflights before asking for credentials
  'access', //             who may use the route at all (client addresses), before any credentials
  'authenticate', //       identity first: rate limits and idempotency keys are scoped to the caller
  'rate-limit', //         refuse excess before spending anything else
  'transform-request', //  headers (e.g. X-Gateway-Version), query, body
  'cache', //              safe methods only, per Cache-Control; a hit ends the chain
  'idempotency', //        just before the upstream: a replay must never reach the backend
  'upstream', //           the route's handler: proxy (aggregation, gRPC, SOAP later)
  'transform-response', // headers and body on the way back; CORS response headers
  // Built-in: the response headers no plugin may change (a deprecated version's), set after every
  // plugin's response hook. Its own phase because 'version' runs first both ways.
  'final-headers',
] as const;

export type Phase = (typeof PHASES)[number];

export const phaseIndex = (p: Phase): number => PHASES.indexOf(p);
