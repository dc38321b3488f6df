/**
 * The Host header without its port ("api.example:8080" → "api.example", "[::1]:80" → "[::1]"),
 * for routing (server/ingress-headers.ts) and for the https redirect's Location.
 */
export function hostName(host: string): string {
  const colon = portColon(host);
  return colon === -1 ? host : host.slice(0, colon);
}

/**
 * The index of the colon before the port, or -1: the last ':' that no ']' follows (an IPv6
 * literal's colons are inside its brackets).
 * Optimization: one loop from the end, not two lastIndexOf: String.prototype.lastIndexOf is a
 * C++ builtin, a runtime call of ~250 instructions each, where this loop is compiled inline
 * (callgrind, bench/instructions.ts: a plain GET ran three of them per request, host and router).
 */
function portColon(host: string): number {
  for (let i = host.length - 1; i >= 0; i--) {
    const c = host.charCodeAt(i);
    if (c === 0x3a) return i;
    if (c === 0x5d) return -1;
  }
  return -1;
}
