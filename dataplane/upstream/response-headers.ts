/**
 * An upstream response's end-to-end headers (ARCHITECTURE §6.1 rule 5): hop-by-hop headers and
 * every header the upstream names in its Connection header are dropped before anyone sees the
 * response (client, taps, stored replays), since framing and connection management are ours.
 * Upgrade never passes here: a 101 only comes back on a WebSocket tunnel, which writes its own.
 */
import type { IncomingHttpHeaders } from 'node:http';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authenticate',
]);

export function endToEndHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const connection = headers.connection;
  // Optimization: the common response names nothing in Connection (or only keep-alive / close).
  const named = connection === undefined ? null : connectionTokens(connection);
  for (const name in headers) {
    if (HOP_BY_HOP.has(name) || named?.has(name)) continue;
    out[name] = headers[name] as string | string[];
  }
  return out;
}

function connectionTokens(value: string | string[]): Set<string> | null {
  // Optimization: most upstreams say exactly this on every response (nginx, Node); no Set for it.
  if (value === 'keep-alive' || value === 'close') return null;
  const tokens = new Set<string>();
  for (const v of Array.isArray(value) ? value : [value])
    for (const t of v.split(',')) {
      const name = t.trim().toLowerCase();
      if (name !== '' && name !== 'close' && name !== 'keep-alive') tokens.add(name);
    }
  return tokens.size ? tokens : null;
}
