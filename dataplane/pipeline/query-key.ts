/**
 * A query string in the order that identifies the resource it names: the response cache's key
 * and the idempotency fingerprint read it. Parameters are sorted by name, so `?b=2&a=1` and
 * `?a=1&b=2` are one resource; but parameters a back end may read as one keep their relative
 * order, since `?id=1&id=2` and `?id=2&id=1` are two lists (most frameworks keep the order of
 * repeated parameters, and an API may serve them in that order).
 *
 * "May read as one" is decided generously, because merging two resources serves one client
 * another's answer, while keeping two orders apart only costs a cache miss: names are compared
 * by their leading run of ASCII letters and digits, lower-cased, after percent-decoding (repeated,
 * so `%2569` is `i` too). So `id`, `ID` (ASP.NET reads names case-insensitively), `%69d`, `id[]`,
 * `id[0]` and `id[1]` (PHP, Rails and qs build one array or object whose order is the
 * parameters'), `a.b`, `a_b` and `a b` (PHP reads all three as `a_b`) keep their order among
 * themselves. Empty parameters (`&&`) are dropped; every parameter's text is kept as sent.
 */

/** The query's parameters, stably sorted by the name a back end could read them under. */
export function queryKey(query: string): string {
  if (query.indexOf('&') === -1) return query;
  const params = query.split('&').filter((p) => p !== '');
  if (params.length < 2) return params.join('&');
  const groups = params.map((p) => [nameGroup(p), p] as const);
  // Array.prototype.sort is stable (ES2019): parameters of one group keep their order.
  groups.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return groups.map((g) => g[1]).join('&');
}

const ASCII_ESCAPE = /%([0-7][0-9a-f])/gi;
const LEADING_ALNUM = /^[a-z0-9]*/;

/** The leading letters and digits of the parameter's name, decoded and lower-cased. */
export function nameGroup(param: string): string {
  const eq = param.indexOf('=');
  let name = eq === -1 ? param : param.slice(0, eq);
  // Decoding only ASCII escapes never fails, and only ASCII counts in the group; a fixed number
  // of rounds bounds the work (a name escaped more deeply than that groups by its escaped text).
  for (let round = 0; round < 4 && name.includes('%'); round++) {
    const decoded = name.replace(ASCII_ESCAPE, (_, hex: string) =>
      String.fromCharCode(Number.parseInt(hex, 16)),
    );
    if (decoded === name) break;
    name = decoded;
  }
  return LEADING_ALNUM.exec(name.toLowerCase())![0];
}
