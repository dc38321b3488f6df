/**
 * The TLS and HTTP/2 settings of the proxy's TLS listener, in one place. Every SecureContext
 * the listener can present (the default one and one per certificate of the snapshot) is made
 * with the same TLS options: OpenSSL reads the protocol range and cipher preference from the
 * context the SNI callback picks, so a context made without them would weaken that host.
 */
import type { SecureContextOptions } from 'node:tls';

/** TLS 1.2 and 1.3 only, Node's default (modern, forward-secret) cipher list, in our order. */
export const TLS_CONTEXT_OPTIONS = {
  minVersion: 'TLSv1.2',
  honorCipherOrder: true,
} as const satisfies SecureContextOptions;

/** Concurrent streams a client may open on one h2 connection (RFC 9113 recommends at least 100). */
export const H2_MAX_CONCURRENT_STREAMS = 100;

/**
 * Memory one h2 session may hold (header tables, queued frames, in MB; Node's default is 10).
 * Past it new streams are refused with ENHANCE_YOUR_CALM, the session stays.
 */
export const H2_MAX_SESSION_MEMORY_MB = 10;
