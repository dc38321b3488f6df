/**
 * Request headers that change what many back ends serve, but are not in the cache key: a
 * response to a request carrying one would be stored under the key of a request without it, and
 * served to everyone who asks for that key (cache poisoning). On the requests the cache answers
 * or stores from (GET, HEAD, and POST when configured), they are removed before the upstream
 * sees them, unless the operator names them in varyHeaders (then each value has its own entry).
 *
 *   X-Original-URL, X-Rewrite-URL            the path served (IIS URL Rewrite, Symfony, Laminas,
 *                                            Drupal): /admin behind the key of /
 *   X-HTTP-Method-Override, X-HTTP-Method,   the method served (Express method-override, Rack,
 *   X-Method-Override                        ASP.NET, Google APIs): a DELETE or a POST stored as a GET
 *   X-Forwarded-Host, X-Host,                the host in generated links, redirects and mails
 *   X-Forwarded-Server                       (Django, Rails, Symfony, Laravel): links to the
 *                                            attacker's host stored for everyone
 *   X-Forwarded-Scheme                       the scheme (nginx setups, Rack): an https redirect
 *                                            stored for https requests too, a redirect loop
 *
 * X-Forwarded-Host holding the request's own Host is kept: the key has the Host, and the
 * gateway sets it so itself when no trusted proxy sent one (server/ingress-headers.ts). Names are
 * compared with "_" read as "-": CGI and PHP read X_Original_URL as X-Original-URL.
 */

export const OVERRIDE_HEADERS: readonly string[] = [
  'x-original-url',
  'x-rewrite-url',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
  'x-forwarded-host',
  'x-host',
  'x-forwarded-server',
  'x-forwarded-scheme',
];

const dashed = (name: string) => (name.includes('_') ? name.replaceAll('_', '-') : name);

/** The override headers to remove on a route: all but those its varyHeaders put in the key. */
export function overridesToStrip(varyHeaders: readonly string[]): ReadonlySet<string> {
  const inKey = new Set(varyHeaders.map((h) => dashed(h.toLowerCase())));
  return new Set(OVERRIDE_HEADERS.filter((h) => !inKey.has(h)));
}

/** Removes them from the upstream request's headers (lower-case names); `host`: the request's Host. */
export function stripOverrides(
  headers: Record<string, string>,
  strip: ReadonlySet<string>,
  host: string,
): void {
  for (const name in headers) {
    const h = dashed(name);
    if (!strip.has(h)) continue;
    if (h === 'x-forwarded-host' && headers[name].toLowerCase() === host.toLowerCase()) continue;
    delete headers[name];
  }
}
