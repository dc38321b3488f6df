/**
 * A Gateway listener port as the request path reads it (route-table.ts `Listener`): the port's
 * listeners, each with a RouteMatcher over the routes that name it and, on HTTPS, its own
 * certificates. A request's Host picks the listener by Gateway API's precedence (an exact
 * hostname, then the longest "*.suffix", then the listener without a hostname) and only that
 * listener's routes are candidates, so a route on the catch-all listener never answers for a host
 * another listener claims (listener isolation); a host no listener takes gets a 404 like a path
 * no route takes. On HTTPS the SNI picks the listener the same way, and the certificate among that
 * listener's own (the first when none covers the name); a client that sends no SNI is taken as
 * any host: the catch-all listener's first certificate (none: no handshake).
 *
 * Gateway API wildcards match one or more labels ("*.example.com" takes a.b.example.com), as the
 * match.hosts of the routes that name listeners do (router.ts hostMatcher); never the bare suffix.
 */
import type { SecureContext } from 'node:tls';
import { pluginManifest } from '../config/catalog.ts';
import type { Certificate, Listener } from '../config/route-table.ts';
import type { RuntimeRoute } from '../pipeline/route.ts';
import { Certificates } from '../tls/certificates.ts';
import { type PortClientValidation, portClientValidation } from '../tls/client-validation.ts';
import { RouteMatcher, underSuffix } from './router.ts';
import type { Served } from './served.ts';

export interface ServedListener {
  id: string;
  /** Lower-case host name or "*.suffix"; null: any host. */
  hostname: string | null;
  matcher: RouteMatcher;
  /** HTTPS: the certificates the listener presents; null on HTTP. */
  certificates: Certificates | null;
}

export class ListenerPort implements Served {
  readonly port: number;
  readonly protocol: 'HTTP' | 'HTTPS';
  /** Most specific hostname first: exact names, then "*.suffix" longest first, then the catch-all. */
  readonly listeners: readonly ServedListener[];
  readonly requestsClientCertificate: boolean;
  /** HTTPS: the client certificate validation of the port (its Gateway's spec.tls.frontend); null: none. */
  readonly clientValidation: PortClientValidation | null;
  /** HTTPS: the PEM pair presented to a client without SNI: the catch-all listener's first certificate. */
  readonly defaultCertificate: { cert: string; key: string } | null;
  readonly matcher: Served['matcher'];
  readonly certificates: Served['certificates'];
  readonly #exact = new Map<string, ServedListener>();
  /** [".suffix", listener], longest suffix first. */
  readonly #wildcards: [string, ServedListener][] = [];
  readonly #any: ServedListener | null;

  constructor(
    port: number,
    protocol: 'HTTP' | 'HTTPS',
    listeners: readonly ServedListener[],
    requestsClientCertificate: boolean,
    defaultCertificate: { cert: string; key: string } | null = null,
    clientValidation: PortClientValidation | null = null,
  ) {
    this.port = port;
    this.protocol = protocol;
    this.clientValidation = clientValidation;
    this.requestsClientCertificate = requestsClientCertificate || clientValidation !== null;
    this.defaultCertificate = defaultCertificate;
    let any: ServedListener | null = null;
    for (const l of listeners) {
      if (l.hostname === null) any = l;
      else if (l.hostname.startsWith('*.')) this.#wildcards.push([l.hostname.slice(1), l]);
      else this.#exact.set(l.hostname, l);
    }
    this.#wildcards.sort((a, b) => b[0].length - a[0].length);
    this.#any = any;
    this.listeners = [...this.#exact.values(), ...this.#wildcards.map(([, l]) => l), ...(any ? [any] : [])];
    this.matcher = {
      match: (path, method, host, headers, query) => {
        const l = this.listenerFor(host);
        return l === null ? null : l.matcher.match(path, method, host, headers, query);
      },
    };
    this.certificates = { lookup: (servername) => this.#certificateFor(servername.toLowerCase()) };
  }

  /** The listener a host name (lower case, no port) goes to, or null when none takes it. */
  listenerFor(host: string): ServedListener | null {
    const exact = this.#exact.get(host);
    if (exact !== undefined) return exact;
    const wildcards = this.#wildcards;
    for (let i = 0; i < wildcards.length; i++) {
      if (underSuffix(host, wildcards[i][0], true)) return wildcards[i][1];
    }
    return this.#any;
  }

  /** The SNI's listener's certificate for it, else that listener's first; undefined: no listener takes the name. */
  #certificateFor(servername: string): SecureContext | undefined {
    const certificates = this.listenerFor(servername)?.certificates;
    if (certificates == null) return undefined;
    return certificates.lookup(servername) ?? certificates.first;
  }
}

/**
 * The table's listener ports, by port. `previous`: the running runtime's, whose listeners'
 * SecureContexts are reused when their PEM is unchanged. Throws, naming the certificate, when one
 * cannot be used (as the proxy's own certificates do).
 */
export function buildListenerPorts(
  listeners: readonly Listener[] | undefined,
  routes: readonly RuntimeRoute[],
  certificates: readonly Certificate[] | undefined,
  previous: ReadonlyMap<number, ListenerPort> | null,
): Map<number, ListenerPort> {
  const ports = new Map<number, ListenerPort>();
  if (listeners === undefined || listeners.length === 0) return ports;
  // Table order within each listener: RouteMatcher keeps it as precedence.
  const routesOf = new Map<string, RuntimeRoute[]>();
  for (const r of routes)
    for (const id of r.entry.listeners ?? []) {
      const list = routesOf.get(id);
      if (list === undefined) routesOf.set(id, [r]);
      else list.push(r);
    }
  const certificateById = new Map(certificates?.map((c) => [c.id, c]));
  const previousCertificates = new Map<string, Certificates>();
  for (const p of previous?.values() ?? [])
    for (const l of p.listeners) if (l.certificates !== null) previousCertificates.set(l.id, l.certificates);

  const byPort = new Map<number, Listener[]>();
  for (const l of listeners) byPort.set(l.port, [...(byPort.get(l.port) ?? []), l]);
  for (const [port, onPort] of byPort) {
    const served = onPort.map(
      (l): ServedListener => ({
        id: l.id,
        hostname: l.hostname ?? null,
        matcher: new RouteMatcher(routesOf.get(l.id) ?? []),
        certificates:
          l.certificates === undefined
            ? null
            : new Certificates(
                l.certificates.map((id) => certificateById.get(id)!),
                previousCertificates.get(l.id) ?? null,
              ),
      }),
    );
    const readsClientCertificate = onPort.some((l) =>
      (routesOf.get(l.id) ?? []).some((r) =>
        r.entry.plugins.some((p) => pluginManifest(p.name)?.needs?.clientCertificate === true),
      ),
    );
    const catchAll = onPort.find((l) => l.hostname === undefined)?.certificates?.[0];
    const pem = catchAll === undefined ? undefined : certificateById.get(catchAll)!;
    // Validation gave every listener of a port the same protocol and client validation.
    ports.set(
      port,
      new ListenerPort(
        port,
        onPort[0].protocol,
        served,
        readsClientCertificate,
        pem ? { cert: pem.cert, key: pem.key } : null,
        portClientValidation(onPort[0].clientValidation),
      ),
    );
  }
  return ports;
}
