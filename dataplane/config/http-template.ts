/**
 * google.api.http path templates (google/api/http.proto's grammar), read once per route and
 * matched per request:
 *
 *   Template = "/" Segments [ ":" Verb ] ;   Segments = Segment { "/" Segment } ;
 *   Segment  = "*" | "**" | LITERAL | Variable ;   Variable = "{" FieldPath [ "=" Segments ] "}" ;
 *
 * `{name}` is `{name=*}`: one segment. A variable may span segments (`{name=shelves/*}/books/*`,
 * `{name=**}`): its value is the matched segments joined by "/", each percent-decoded. `**`
 * matches the rest of the path, so it may only come last. A field path is dotted
 * (`{book.name}`): it sets a field of a nested message.
 */

/** The characters a template may hold (the JSON schema's check; parseTemplate reads the grammar). */
export const GRPC_TEMPLATE = "^/[A-Za-z0-9\\-._~!$&'()*+,;=:@%/{}]*$";

export type Sub = { literal: string } | { any: true } | { rest: true };
export type Part = Sub | { field: string; segments: readonly Sub[] };

export interface HttpTemplate {
  readonly parts: readonly Part[];
  /** The custom verb after the last segment (`:cancel`), or null. */
  readonly verb: string | null;
}

const FIELD_PATH = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
const LITERAL = /^[A-Za-z0-9\-._~!$&'()+,;=@%]+$/;

/** The template of `text`, or what is wrong with it. */
export function parseTemplate(text: string): HttpTemplate | { error: string } {
  if (!text.startsWith('/')) return { error: 'must start with "/"' };
  let rest = text.slice(1);
  let verb: string | null = null;
  // A verb follows the last segment: the last ":" outside braces.
  const lastBrace = rest.lastIndexOf('}');
  const colon = rest.lastIndexOf(':');
  if (colon > lastBrace && colon > rest.lastIndexOf('/')) {
    verb = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!LITERAL.test(verb)) return { error: `the verb ${JSON.stringify(verb)} is not a literal` };
  }
  const parts: Part[] = [];
  const fields = new Set<string>();
  for (const piece of splitOutsideBraces(rest)) {
    if (piece.startsWith('{')) {
      const m = /^\{([^=}]+)(?:=([^}]+))?\}$/.exec(piece);
      if (m === null) return { error: `${JSON.stringify(piece)} is not a {field} or {field=segments}` };
      const [, field, sub = '*'] = m;
      if (!FIELD_PATH.test(field)) return { error: `${JSON.stringify(field)} is not a field path` };
      if (fields.has(field)) return { error: `{${field}} is given twice` };
      fields.add(field);
      const segments: Sub[] = [];
      for (const s of sub.split('/')) {
        const one = segment(s);
        if (one === null)
          return { error: `${JSON.stringify(s)} in {${field}=…} is not "*", "**" or a literal` };
        segments.push(one);
      }
      parts.push({ field, segments });
    } else {
      const one = segment(piece);
      if (one === null)
        return { error: `the segment ${JSON.stringify(piece)} is not "*", "**", a literal or a {field}` };
      parts.push(one);
    }
  }
  const subs = parts.flatMap((p) => ('field' in p ? p.segments : [p]));
  const deep = subs.findIndex((s) => 'rest' in s);
  if (deep !== -1 && deep !== subs.length - 1) return { error: '"**" may only match the end of the path' };
  return { parts, verb };
}

function segment(s: string): Sub | null {
  if (s === '*') return { any: true };
  if (s === '**') return { rest: true };
  return LITERAL.test(s) ? { literal: s } : null;
}

/** "a/{b=c/*}/d" → ["a", "{b=c/*}", "d"]: "/" inside braces belongs to the variable. */
function splitOutsideBraces(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '{') depth++;
    else if (s[i] === '}') depth--;
    else if (s[i] === '/' && depth === 0) {
      out.push(s.slice(start, i));
      start = i + 1;
    }
  }
  out.push(s.slice(start));
  return out;
}

/** The fields the template's variables set, as written (dotted paths). */
export function templateFields(t: HttpTemplate): string[] {
  return t.parts.flatMap((p) => ('field' in p ? [p.field] : []));
}

/** Whether the variable of `field` may match more than one segment (its value then holds "/"). */
export function spansSegments(t: HttpTemplate, field: string): boolean {
  const p = t.parts.find((x) => 'field' in x && x.field === field) as
    | { segments: readonly Sub[] }
    | undefined;
  return p !== undefined && (p.segments.length > 1 || p.segments.some((s) => 'rest' in s));
}

/** The values of the template's variables in `path` (a normalized request path), or null when it does not match. */
export function matchTemplate(t: HttpTemplate, path: string): Record<string, string> | null {
  let p = path;
  if (t.verb !== null) {
    if (!p.endsWith(`:${t.verb}`)) return null;
    p = p.slice(0, -(t.verb.length + 1));
  }
  const segs = p.split('/').slice(1);
  const values: Record<string, string> = {};
  let i = 0;
  for (const part of t.parts) {
    if ('field' in part) {
      const from = i;
      for (const s of part.segments) {
        const n = take(s, segs, i);
        if (n < 0) return null;
        i += n;
      }
      try {
        values[part.field] = segs.slice(from, i).map(decodeURIComponent).join('/');
      } catch {
        return null;
      }
    } else {
      const n = take(part, segs, i);
      if (n < 0) return null;
      i += n;
    }
  }
  return i === segs.length ? values : null;
}

/** How many segments from `i` the sub-pattern matches, or -1. */
function take(s: Sub, segs: readonly string[], i: number): number {
  if ('rest' in s) return segs.length - i > 0 && segs.slice(i).every((x) => x !== '') ? segs.length - i : -1;
  if (i >= segs.length || segs[i] === '') return -1;
  if ('literal' in s) return segs[i] === s.literal ? 1 : -1;
  return 1;
}
