/**
 * Every error the gateway itself produces, declared once: a stable code clients and tests
 * can rely on, its HTTP status and its title. Rendered only by problem.ts (RFC 9457).
 */
export const ERRORS = {
  SLC_ERR_ROUTE_NOT_FOUND: { status: 404, title: 'No route matches this request' },
  SLC_ERR_BAD_PATH: { status: 400, title: 'The request path cannot be normalized safely' },
  SLC_ERR_BAD_PATH_VALUE: {
    status: 400,
    title: 'A value from the request cannot be placed in the upstream path (a dot segment or a separator)',
  },
  SLC_ERR_BAD_HEADER: { status: 400, title: 'A request header is not acceptable' },
  SLC_ERR_BODY_TOO_LARGE: { status: 413, title: 'The request body is larger than allowed' },
  SLC_ERR_UNSUPPORTED_ENCODING: {
    status: 415,
    title: 'The request body is in a content coding not accepted here',
  },
  SLC_ERR_NOT_READY: { status: 503, title: 'The gateway has no configuration loaded yet' },
  SLC_ERR_UPSTREAM_TIMEOUT: { status: 504, title: 'The upstream did not answer in time' },
  SLC_ERR_UPSTREAM_UNAVAILABLE: { status: 502, title: 'The upstream could not be reached' },
  SLC_ERR_UPSTREAM_CIRCUIT_OPEN: {
    status: 503,
    title: 'The upstream is failing; its circuit breaker is open',
  },
  // An upstream of a Service's endpoints (route-table.ts) when none is ready: nothing was sent.
  SLC_ERR_UPSTREAM_NO_ENDPOINTS: { status: 503, title: 'The upstream has no ready endpoint' },
  SLC_ERR_UPSTREAM_BAD_RESPONSE: { status: 502, title: 'The upstream sent an invalid response' },
  // A route that answers by itself (handlers/respond): a Gateway API rule whose backends are all
  // invalid or absent, which the spec answers 500. The route's status says why.
  SLC_ERR_BACKEND_INVALID: { status: 500, title: "The route's backend is not valid: see the route's status" },
  SLC_ERR_INTERNAL: { status: 500, title: 'Internal gateway error' },
  SLC_ERR_UNAUTHORIZED: { status: 401, title: 'Authentication is required' },
  SLC_ERR_CONFIG_INVALID: { status: 422, title: 'The configuration is invalid' },
  SLC_ERR_BAD_REQUEST: { status: 400, title: 'The request is malformed' },
  SLC_ERR_METHOD_NOT_ALLOWED: { status: 405, title: 'This method is not proxied' },
  SLC_ERR_IDEMPOTENCY_KEY_MISSING: { status: 400, title: 'This route requires an Idempotency-Key header' },
  SLC_ERR_IDEMPOTENCY_KEY_INVALID: { status: 400, title: 'The Idempotency-Key header is not acceptable' },
  SLC_ERR_JSON_DUPLICATE_KEY: { status: 400, title: 'The JSON body has a duplicate key' },
  SLC_ERR_IDENTITY_REQUIRED: { status: 401, title: 'An idempotency key needs an identified caller' },
  SLC_ERR_OPERATION_NOT_FOUND: { status: 404, title: 'No operation with this key for this caller' },
  SLC_ERR_IDEMPOTENCY_IN_PROGRESS: {
    status: 409,
    title: 'A request with this Idempotency-Key is still in progress',
  },
  SLC_ERR_IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    title: 'This Idempotency-Key was used for a different request',
  },
  SLC_ERR_CREDENTIALS_MISSING: { status: 401, title: 'Credentials are required' },
  SLC_ERR_CREDENTIALS_INVALID: { status: 401, title: 'The credentials are not valid' },
  SLC_ERR_RATE_LIMITED: { status: 429, title: 'Too many requests' },
  SLC_ERR_RATE_LIMIT_UNAVAILABLE: { status: 503, title: 'The rate-limit store is unavailable' },
  SLC_ERR_ADDRESS_REFUSED: { status: 403, title: "The client's address may not use this route" },
  SLC_ERR_CORS_REFUSED: { status: 403, title: 'This cross-origin request is not allowed' },
  SLC_ERR_VERSION_GONE: { status: 410, title: 'This API version is past its sunset date' },
  SLC_ERR_IDEMPOTENCY_STORE_UNAVAILABLE: {
    status: 503,
    title: 'The idempotency store is unavailable; nothing was executed',
  },
  SLC_ERR_WEBSOCKET_LIMIT: {
    status: 503,
    title: 'This gateway process has as many open WebSockets as it allows',
  },
  SLC_ERR_WEBSOCKET_ORIGIN_REFUSED: {
    status: 403,
    title: 'Pages of this origin may not open a WebSocket on this route',
  },
  SLC_ERR_CACHE_PURGE_FAILED: { status: 503, title: 'The cache store could not be purged' },
  SLC_ERR_CACHE_PURGE_UNSUPPORTED: {
    status: 501,
    title: "This admin port cannot purge the cache: purge each data plane's own admin port",
  },
  SLC_ERR_AGGREGATE_CALL_FAILED: { status: 502, title: 'A required backend call of the aggregate failed' },
  SLC_ERR_AGGREGATE_CALL_TIMEOUT: {
    status: 504,
    title: 'A required backend call of the aggregate did not answer in time',
  },
  SLC_ERR_AGGREGATE_CALL_STATUS: { status: 502, title: 'The backend call answered with an error status' },
  SLC_ERR_AGGREGATE_NOT_JSON: { status: 502, title: 'The backend call did not answer with JSON' },
  SLC_ERR_AGGREGATE_TOO_LARGE: {
    status: 502,
    title: 'The backend answers are larger than the aggregate allows',
  },
  SLC_ERR_SOAP_BAD_REQUEST: {
    status: 400,
    title: 'The request cannot be translated to the SOAP operation',
  },
  SLC_ERR_SOAP_CLIENT_FAULT: { status: 422, title: 'The SOAP service refused the request (a client fault)' },
  SLC_ERR_SOAP_SERVER_FAULT: { status: 502, title: 'The SOAP service failed (a server fault)' },
  SLC_ERR_SOAP_BAD_RESPONSE: {
    status: 502,
    title: 'The SOAP service sent a response that is not a SOAP answer',
  },
  SLC_ERR_SOAP_DTD_REFUSED: {
    status: 502,
    title: 'The SOAP response declares a DTD or entities, which are refused',
  },
  SLC_ERR_SOAP_TOO_LARGE: { status: 502, title: 'The SOAP response is larger or deeper than allowed' },
  // The HTTP status is the gRPC status's, by the standard table (handlers/grpc/status.ts); 502 is
  // only the class it falls in when read without that table.
  SLC_ERR_GRPC_STATUS: { status: 502, title: 'The gRPC service answered with an error status' },
  SLC_ERR_GRPC_CALL_FAILED: { status: 502, title: 'The gateway could not complete the gRPC call' },
  SLC_ERR_INSUFFICIENT_SCOPE: { status: 403, title: 'The token lacks a scope this route requires' },
  SLC_ERR_AUTH_UNAVAILABLE: { status: 503, title: 'The identity provider could not be reached' },
  SLC_ERR_CLIENT_CERT_MISSING: { status: 401, title: 'A verified client certificate is required' },
  SLC_ERR_CLIENT_CERT_FORBIDDEN: { status: 403, title: 'This client certificate is not allowed here' },
  // Never reaches the client (it is gone): nginx's 499, for the access log and the metrics.
  SLC_ERR_CLIENT_CLOSED: { status: 499, title: 'The client closed the request before its response' },
  SLC_ERR_DRAINING: { status: 503, title: 'The gateway is draining: it is shutting down' },
  SLC_ERR_OVERLOADED: {
    status: 503,
    title: 'This gateway process has as many requests in flight as it allows; retry shortly',
  },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERRORS;
