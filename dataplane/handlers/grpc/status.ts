/**
 * gRPC status → HTTP status: the standard mapping (google.rpc.Code's documentation, as
 * grpc-gateway and Envoy's transcoder use it), one table, indexed by the code's number.
 */

/** [name, HTTP status] per gRPC code 0..16. */
const TABLE = [
  ['OK', 200],
  ['CANCELLED', 499],
  ['UNKNOWN', 500],
  ['INVALID_ARGUMENT', 400],
  ['DEADLINE_EXCEEDED', 504],
  ['NOT_FOUND', 404],
  ['ALREADY_EXISTS', 409],
  ['PERMISSION_DENIED', 403],
  ['RESOURCE_EXHAUSTED', 429],
  ['FAILED_PRECONDITION', 400],
  ['ABORTED', 409],
  ['OUT_OF_RANGE', 400],
  ['UNIMPLEMENTED', 501],
  ['INTERNAL', 500],
  ['UNAVAILABLE', 503],
  ['DATA_LOSS', 500],
  ['UNAUTHENTICATED', 401],
] as const;

export type GrpcStatusName = (typeof TABLE)[number][0];

/** The code's name and HTTP status; a code outside the table is UNKNOWN (500), as gRPC reads it. */
export function httpOfGrpc(code: number): { name: GrpcStatusName | 'UNKNOWN'; status: number } {
  const row = Number.isInteger(code) && code >= 0 && code < TABLE.length ? TABLE[code] : TABLE[2];
  return { name: row[0], status: row[1] };
}

/** Codes that say the service (not the request) failed: they count against its circuit breaker. */
export const BREAKER_FAILURES: ReadonlySet<number> = new Set([4, 14]); // DEADLINE_EXCEEDED, UNAVAILABLE
