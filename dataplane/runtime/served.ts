/**
 * What one port serves, as the request path and the TLS handshake read it: the Runtime itself on
 * the proxy's own ports (--proxy-port, --https-port), a ListenerPort (listener-port.ts) on a
 * Gateway listener's port. The server code reads `source.current` once per request (and per
 * handshake), as it reads the holder's runtime, so a snapshot swap never changes a request midway.
 */
import type { SecureContext } from 'node:tls';
import type { RuntimeRoute } from '../pipeline/route.ts';

export interface Served {
  /** The route of a request, or null (404). */
  matcher: {
    match(
      path: string,
      method: string,
      host: string,
      headers: Record<string, string>,
      query?: string,
    ): RuntimeRoute | null;
  };
  /** The context for a TLS server name (SNI); undefined: none here (the server's default, if any). */
  certificates: { lookup(servername: string): SecureContext | undefined };
  /** Whether the TLS handshake asks for a client certificate: a route served here reads one (mtls-auth). */
  requestsClientCertificate: boolean;
}

/** Where a server finds what it serves now: the RuntimeHolder, or a view of one listener port of it. */
export interface ServedSource {
  readonly current: Served | null;
}
