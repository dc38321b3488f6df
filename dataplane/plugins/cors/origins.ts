/**
 * Which origins a cors policy allows, compiled once per snapshot: exact origins in a Set (one
 * lookup), `scheme://*.domain[:port]` entries as a prefix and a suffix with one or more DNS
 * labels between them, and the originRegex list (tried only when configured, on origins of a
 * bounded length). Pure: no I/O, no clock.
 */
import { anchoredRegex } from './manifest.ts';

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

export function compileOrigins(origins: readonly string[], originRegex: readonly string[]): OriginRule {
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
  const regexes = originRegex.map(anchoredRegex);
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
