/**
 * Host names as Gateway API reads them: "*.example.com" matches one or more labels before
 * ".example.com" (never example.com itself). A route attached to a listener serves the
 * intersection of its hostnames and the listener's: every route hostname the listener's
 * covers, and the listener's hostname where a route wildcard covers it (a.example.com for a
 * route's *.example.com). Pure.
 */

/** True when pattern (an exact name or "*.suffix") covers name (an exact name or a wildcard). */
export function covers(pattern: string, name: string): boolean {
  if (!pattern.startsWith('*.')) return pattern === name;
  const suffix = pattern.slice(1); // ".example.com"
  if (name.startsWith('*.')) return name.endsWith(suffix) && name.length >= pattern.length;
  return name.endsWith(suffix) && name.length > suffix.length;
}

/**
 * The host names a route serves on a listener: undefined = any host (neither names one); []
 * = none in common (the route does not attach there: NoMatchingListenerHostname).
 */
export function intersectHostnames(
  listener: string | undefined,
  route: readonly string[] | undefined,
): string[] | undefined {
  if (route === undefined || route.length === 0) return listener === undefined ? undefined : [listener];
  if (listener === undefined) return setOf(route);
  const out: string[] = [];
  for (const h of route) {
    if (covers(listener, h)) out.push(h);
    else if (covers(h, listener)) out.push(listener);
  }
  return setOf(out);
}

/** How specific a listener hostname is, for choosing among listeners: higher first. */
export function specificity(hostname: string | undefined): number {
  if (hostname === undefined) return 0;
  return hostname.startsWith('*.') ? hostname.length : 1_000 + hostname.length;
}

function setOf(values: readonly string[]): string[] {
  return [...new Set(values.map((v) => v.toLowerCase()))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
