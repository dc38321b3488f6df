/**
 * The upstream path, rewritten: `pattern` names the request path's segments ("/users/{id}"),
 * `rewrite` builds the new path from them ("/v2/accounts/{{ path.id }}"). Routes match Exact
 * or Prefix paths without parameters, so the user of a pattern (the request-transformer's path
 * rewrite, an aggregate's call paths) captures its own parameters, once per request,
 * from the normalized path (a segment's value is decoded; the normalizer has refused an encoded
 * "/"). Each segment of the rewrite renders on its own and every looked-up value is
 * percent-encoded, so a value is always inside one segment; a segment built from request values
 * that is a dot segment or holds a path separator in any spelling (config/path-grammar.ts,
 * unsafeSegment) refuses the request before anything is sent. A path that does not match the
 * pattern is forwarded as it would be without the rewrite.
 */
import { unsafeSegment } from '../../config/path-grammar.ts';
import { pathSegment, render, type Sources, type Template } from '../../config/template.ts';
import { PATH_PARAM as PARAM } from '../../config/transform-schema.ts';

export interface PathRewrite {
  /** The pattern's segments: a literal, or the name of the parameter it captures. */
  pattern: readonly ({ literal: string } | { param: string })[];
  /** The rewrite's segments (after the leading "/"). */
  segments: readonly Template[];
}

export function compilePathRewrite(
  c: { pattern: string; rewrite: string },
  compile: (text: string) => Template,
): PathRewrite {
  return {
    pattern: c.pattern
      .split('/')
      .slice(1)
      .map((seg) => {
        const m = PARAM.exec(seg);
        return m === null ? { literal: seg } : { param: m[1] };
      }),
    segments: c.rewrite.split('/').slice(1).map(compile),
  };
}

/** The parameters the path holds, or null when it does not match the pattern. */
export function captureParams(rw: PathRewrite, path: string): Record<string, string> | null {
  const segs = path.split('/');
  if (segs.length - 1 !== rw.pattern.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < rw.pattern.length; i++) {
    const p = rw.pattern[i];
    const seg = segs[i + 1];
    if ('literal' in p) {
      if (seg !== p.literal) return null;
    } else {
      if (seg === '') return null;
      try {
        params[p.param] = decodeURIComponent(seg);
      } catch {
        return null;
      }
    }
  }
  return params;
}

/** The upstream path, or why a request value cannot stand in it (the request is refused with SLC_ERR_BAD_PATH_VALUE). */
export function renderPath(rw: PathRewrite, sources: Sources): string | { error: string } {
  let out = '';
  for (let i = 0; i < rw.segments.length; i++) {
    const t = rw.segments[i];
    const seg = render(t, sources, pathSegment) as string;
    // Literal segments were checked with the config; only request values can make one unsafe.
    if (t.literal === null) {
      const why = unsafeSegment(seg);
      if (why !== null) return { error: `segment ${i + 1} of the upstream path, from the request: ${why}` };
    }
    out += `/${seg}`;
  }
  return out;
}
