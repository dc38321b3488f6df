/**
 * The path sent upstream: stripPrefix applied to the normalized path (or a transformer's
 * rewritten path, `rewritten`, taken as it is), the upstream's base path prepended.
 */
export function upstreamPath(
  path: string,
  query: string,
  stripLength: number,
  basePath: string,
  rewritten: string | null = null,
): string {
  let p = rewritten ?? path;
  if (stripLength > 0 && rewritten === null) {
    p = p.slice(stripLength);
    if (p === '' || p.charCodeAt(0) !== 47) p = `/${p}`;
  }
  if (basePath) p = p === '/' ? basePath : basePath + p;
  return query ? `${p}?${query}` : p;
}
