/**
 * Templates for the transformers: "prefix-{{ header.x-tenant }}-{{ jwt.claims.sub }}". A template
 * is compiled once (when the config is validated, and again when the snapshot is built) into
 * literal parts and source lookups; a request renders it with the escaper of the place the value
 * goes to (a header value, a path segment, a query value, a JSON string). Whatever a source
 * holds, a template emits one string: the escaper, not the source, decides what is safe.
 *
 * Sources, all read-only and per request: consumer.id, route.id, jwt.claims.NAME (top-level
 * claims, strings, numbers and booleans; anything else reads as absent), header.NAME,
 * query.NAME (the first value, form-decoded), path.NAME (a parameter of the transformer's path
 * pattern), and where the caller allows it body.PATH (a member of the request's JSON body,
 * dotted: "order.id", "items.0.sku"; only the soap handler reads it). An absent source renders as "".
 */

export type Lookup =
  | { kind: 'consumer' }
  | { kind: 'route' }
  | { kind: 'claim' | 'header' | 'query' | 'path' | 'body'; name: string };

/** Literal text, or a source to look up. */
export type Part = string | Lookup;

export interface Template {
  readonly parts: readonly Part[];
  /** The whole template when it has no lookup (rendering it costs nothing). */
  readonly literal: string | null;
}

/** Where a rendered value's sources come from, for one request. */
export interface Sources {
  consumer(): string;
  route(): string;
  claim(name: string): string;
  header(name: string): string;
  query(name: string): string;
  path(name: string): string;
  /** A scalar of the request's JSON body by dotted path (read only by templates that allow body.PATH). */
  body?(path: string): string;
}

/** Turns a source's value into what may stand in its place, or null: the request is refused. */
export type Escaper = (value: string) => string | null;

const OPEN = '{{';
const CLOSE = '}}';
const SOURCE =
  /^(?:(consumer\.id)|(route\.id)|jwt\.claims\.([A-Za-z0-9_-]+)|header\.([A-Za-z0-9!#$%&'*+.^`|~-]+)|query\.([A-Za-z0-9._~-]+)|path\.([A-Za-z_][A-Za-z0-9_]*))$/;

export const SOURCES_HELP = 'consumer.id, route.id, jwt.claims.NAME, header.NAME, query.NAME or path.NAME';
const SOURCES_HELP_BODY = SOURCES_HELP.replace(' or path.NAME', ', path.NAME or body.PATH');
/** body.PATH: dotted member names or array indexes of the JSON request body. */
const BODY_SOURCE = /^body\.([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)$/;

/** Compiles a template, or says what is wrong with it; `allowBody`: body.PATH is a source too. */
export function compileTemplate(text: string, allowBody = false): Template | { error: string } {
  const parts: Part[] = [];
  let at = 0;
  while (at < text.length) {
    const open = text.indexOf(OPEN, at);
    if (open === -1) {
      if (text.includes(CLOSE, at)) return { error: 'has "}}" without "{{"' };
      parts.push(text.slice(at));
      break;
    }
    if (text.slice(at, open).includes(CLOSE)) return { error: 'has "}}" without "{{"' };
    const close = text.indexOf(CLOSE, open + 2);
    if (close === -1) return { error: 'has "{{" without "}}"' };
    if (open > at) parts.push(text.slice(at, open));
    const source = text.slice(open + 2, close).trim();
    const b = allowBody ? BODY_SOURCE.exec(source) : null;
    if (b !== null) {
      parts.push({ kind: 'body', name: b[1] });
      at = close + 2;
      continue;
    }
    const m = SOURCE.exec(source);
    if (m === null)
      return {
        error: `{{ ${source} }} is not a source (use ${allowBody ? SOURCES_HELP_BODY : SOURCES_HELP})`,
      };
    if (m[1]) parts.push({ kind: 'consumer' });
    else if (m[2]) parts.push({ kind: 'route' });
    else if (m[3]) parts.push({ kind: 'claim', name: m[3] });
    else if (m[4]) parts.push({ kind: 'header', name: m[4].toLowerCase() });
    else if (m[5]) parts.push({ kind: 'query', name: m[5] });
    else parts.push({ kind: 'path', name: m[6] });
    at = close + 2;
  }
  const literal = parts.every((p) => typeof p === 'string') ? parts.join('') : null;
  return { parts, literal };
}

/** Compiles a template known to be valid (the config passed validation). */
export function template(text: string, allowBody = false): Template {
  const t = compileTemplate(text, allowBody);
  if ('error' in t) throw new Error(`template ${JSON.stringify(text)} ${t.error}`);
  return t;
}

/** The path parameters a template reads. */
export const pathNames = (t: Template): string[] =>
  t.parts.flatMap((p) => (typeof p !== 'string' && p.kind === 'path' ? [p.name] : []));

export const usesQuery = (t: Template): boolean =>
  t.parts.some((p) => typeof p !== 'string' && p.kind === 'query');

/** Renders for one request: literals as written, each looked-up value through `escaper`; null if refused. */
export function render(t: Template, sources: Sources, escaper: Escaper): string | null {
  if (t.literal !== null) return t.literal;
  let out = '';
  for (const p of t.parts) {
    if (typeof p === 'string') {
      out += p;
      continue;
    }
    const raw =
      p.kind === 'consumer'
        ? sources.consumer()
        : p.kind === 'route'
          ? sources.route()
          : p.kind === 'claim'
            ? sources.claim(p.name)
            : p.kind === 'header'
              ? sources.header(p.name)
              : p.kind === 'query'
                ? sources.query(p.name)
                : p.kind === 'path'
                  ? sources.path(p.name)
                  : (sources.body?.(p.name) ?? '');
    const safe = escaper(raw);
    if (safe === null) return null;
    out += safe;
  }
  return out;
}

// The escapers, one per place a value goes.
const UNSAFE_IN_HEADER = /[^\t\x20-\x7e\x80-\xff]/;

/** A header value: refused (not stripped) when it holds CR, LF, NUL or anything outside the field-value grammar. */
export const headerValue: Escaper = (v) => (UNSAFE_IN_HEADER.test(v) ? null : v);

/** A query value: percent-encoded as a whole (no "&", "=", "#" or "+" survives as syntax). */
export const queryValue: Escaper = (v) => encodeURIComponent(v.toWellFormed());

/** Part of one path segment: percent-encoded, "/" included, so it can never add a segment. */
export const pathSegment: Escaper = (v) => encodeURIComponent(v.toWellFormed());

/** A JSON string value: set through the object model, never spliced into JSON text. */
export const jsonString: Escaper = (v) => v;

/** Characters XML 1.0 allows (its Char production); anything else, lone surrogates included, is refused. */
const NOT_XML_CHAR = /[^\t\n\r\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;
const XML_SPECIAL = /[&<>"'\r]/g;
const XML_ENTITY: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
  '\r': '&#13;', // a raw CR would reach the service as LF (XML end-of-line handling)
};

/**
 * XML character data (element text or an attribute value): the five markup characters escaped,
 * so a value is always text and never structure; refused when it holds a character XML 1.0
 * forbids (NUL, most C0 controls, U+FFFE/U+FFFF, lone surrogates).
 */
export const xmlText: Escaper = (v) =>
  NOT_XML_CHAR.test(v) ? null : v.replace(XML_SPECIAL, (c) => XML_ENTITY[c]);
