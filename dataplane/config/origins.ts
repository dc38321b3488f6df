/**
 * Which origins a list allows (a cors policy's origins, a WebSocket route's allowedOrigins),
 * compiled once per snapshot: exact origins in a Set (one lookup), `scheme://*.domain[:port]`
 * entries as a prefix and a suffix with one or more DNS labels between them, and regular
 * expressions (cors's originRegex, compiled and checked by the plugin; tried only when
 * configured, on origins of a bounded length). Pure: no I/O, no clock.
 */

/** A serialized origin as browsers send it (lower case, no path), optionally with `*.` in front of the host. */
const HOST = '(\\*\\.)?[a-z0-9-]+(\\.[a-z0-9-]+)*|\\[[0-9a-f:.]+\\]';
const SERIALIZED = `[a-z][a-z0-9+.-]*://(${HOST})(:[0-9]{1,5})?`;
/** An origin entry (JSON Schema pattern): a serialized origin, `https://*.example.com`, or `*` (every origin). */
export const ORIGIN_PATTERN = `^(\\*|${SERIALIZED})$`;
/** The same without `*`: a list that must name its origins (WebSocket allowedOrigins). */
export const NAMED_ORIGIN_PATTERN = `^${SERIALIZED}$`;

/** Longer Origin values are never allowed: no serialized origin is this long, and regexes see bounded input. */
export const MAX_ORIGIN_LENGTH = 300;
/** One or more DNS labels, what `*.` stands for (linear: the dot separates the repetitions). */
const LABELS = /^[a-z0-9-]+(?:\.[a-z0-9-]+)*$/;

interface Wildcard {
  prefix: string;
  suffix: string;
}

export interface OriginRule {
  /** `*`: every origin. */
  readonly any: boolean;
  allows(origin: string): boolean;
}

export function compileOrigins(origins: readonly string[], regexes: readonly RegExp[] = []): OriginRule {
  const any = origins.includes('*');
  const exact = new Set<string>();
  const wildcards: Wildcard[] = [];
  for (const o of origins) {
    if (o === '*') continue;
    const star = o.indexOf('://*.');
    if (star < 0) exact.add(o);
    // The suffix keeps its dot: "https://*.example.com" never allows "https://evilexample.com".
    else wildcards.push({ prefix: o.slice(0, star + 3), suffix: o.slice(star + 4) });
  }
  return {
    any,
    allows(origin: string): boolean {
      if (any) return true;
      if (exact.has(origin)) return true;
      // "null" (sandboxed frames, file: pages) is shared by every such page: no pattern may allow it.
      if (origin.length > MAX_ORIGIN_LENGTH || origin === 'null') return false;
      for (const w of wildcards) if (wildcardAllows(w, origin)) return true;
      for (const r of regexes) if (r.test(origin)) return true;
      return false;
    },
  };
}

function wildcardAllows(w: Wildcard, origin: string): boolean {
  const { prefix, suffix } = w;
  return (
    origin.length > prefix.length + suffix.length &&
    origin.startsWith(prefix) &&
    origin.endsWith(suffix) &&
    LABELS.test(origin.slice(prefix.length, origin.length - suffix.length))
  );
}

/**
 * The origins a WebSocket handshake names, each of which must be allowed: Origin (RFC 6455), and
 * Sec-WebSocket-Origin, the hybi-07..10 drafts' name for it, which servers still read for
 * protocol version 8 (ws does). An Origin sent on two lines was joined at ingress ("a, b"): it
 * is no origin, read as "null". Empty: no browser sent it (curl, a back end), nothing to check.
 */
export function handshakeOrigins(
  headers: Readonly<Record<string, string | undefined>>,
  repeated: ReadonlySet<string> | null,
): string[] {
  const out: string[] = [];
  for (const name of ['origin', 'sec-websocket-origin']) {
    const v = headers[name];
    if (v !== undefined) out.push(repeated?.has(name) ? 'null' : v);
  }
  return out;
}
