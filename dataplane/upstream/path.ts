/** The path sent upstream: stripPrefix applied to the normalized path, the upstream's base path prepended. */
export function upstreamPath(path: string, query: string, stripLength: number, basePath: string): string {
  let p = path;
  if (stripLength > 0) {
    p = p.slice(stripLength);
    if (p === '' || p.charCodeAt(0) !== 47) p = `/${p}`;
  }
  if (basePath) p = p === '/' ? basePath : basePath + p;
  return query ? `${p}?${query}` : p;
}
