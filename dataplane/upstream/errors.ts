/** Maps an undici (or socket) error to the problem the client gets. */
import type { ErrorCode } from '../errors/codes.ts';

const TIMEOUTS = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'SLC_UPSTREAM_SEND_TIMEOUT',
  'ETIMEDOUT',
]);
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
]);

/**
 * Why a request's signal aborts when its client goes away (pipeline/client-signal.ts): one
 * object for every request (no stack captured per cancel); its code maps to 499 below.
 */
export const CLIENT_CLOSED: Error = Object.assign(new Error('the client closed the request'), {
  name: 'AbortError',
  code: 'SLC_CLIENT_CLOSED',
});

/** The upstream took none of the request body for the upstream's timeouts.sendMs (send-timeout.ts). */
export class SendTimeoutError extends Error {
  readonly code = 'SLC_UPSTREAM_SEND_TIMEOUT';
}

export class BodyTooLargeError extends Error {
  readonly code = 'SLC_BODY_TOO_LARGE';
}

/** An error's string code ('' for none: a DOMException's code is a number). */
function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

export function upstreamErrorCode(err: unknown): ErrorCode {
  if (err instanceof BodyTooLargeError) return 'SLC_ERR_BODY_TOO_LARGE';
  if (err === CLIENT_CLOSED) return 'SLC_ERR_CLIENT_CLOSED';
  // Otherwise a caller withdrew the call (an aggregate call past its time).
  if ((err as { name?: unknown } | null)?.name === 'AbortError') return 'SLC_ERR_UPSTREAM_TIMEOUT';
  const code = codeOf(err);
  if (TIMEOUTS.has(code)) return 'SLC_ERR_UPSTREAM_TIMEOUT';
  if (UNREACHABLE.has(code)) return 'SLC_ERR_UPSTREAM_UNAVAILABLE';
  if (code.startsWith('HPE_') || code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH' || code === 'UND_ERR_INFO')
    return 'SLC_ERR_UPSTREAM_BAD_RESPONSE';
  return 'SLC_ERR_UPSTREAM_UNAVAILABLE';
}

// Failures that happen before a single byte of the request leaves: the upstream cannot have acted on it.
const NOT_SENT = new Set([
  'ECONNREFUSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'SLC_BODY_TOO_LARGE',
]);

/**
 * Whether the upstream may have received (and acted on) the request. Only failures known to
 * come before sending say no; a reset, a timeout after sending or a cut response say maybe.
 */
export function mayHaveReachedUpstream(err: unknown): boolean {
  return !NOT_SENT.has(codeOf(err));
}
