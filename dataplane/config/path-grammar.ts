/**
 * One reading of the path (ARCHITECTURE §6.1 rule 2), written once for both sides: the data
 * plane's ingress normalizes request targets with it, and the controller normalizes route paths
 * with it, so a route path is accepted only in a form some request path normalizes to (and so
 * can match), and every path the ingress would refuse is refused as a route path too.
 *
 * The rules: percent-encoded unreserved characters are decoded, other escapes upper-cased,
 * dot segments ("." and "..", also encoded as "%2e") resolved and duplicate slashes collapsed.
 * Refused, because two servers could read them differently: an encoded "/", "\", NUL, ";", "?"
 * or "#"; a literal "\" or ";" (or any character outside pchar); double encoding ("%2561", also
 * when the digits are escaped themselves, "%25%36%31"); an invalid escape; escapes whose bytes
 * are not UTF-8 (overlong forms like "%C0%AE", a lone continuation byte like "%80", a truncated
 * sequence, surrogates, code points above U+10FFFF); a fragment in the request target.
 *
 * Request paths and route paths differ in two ways only: a route path may not hold dot segments
 * (a route "/a/../b" would read as "/b" to one reader and not to another, so it is an error rather
 * than resolved), and a route path drops its trailing slash (Prefix matching is on segment
 * boundaries, so "/a/" and "/a" match the same requests).
 */

/**
 * The characters a route path may be written with (a JSON Schema pattern for the CRD and the
 * route table): pchar without ";" and "*" (kept out since matching used find-my-way, which read "*" as a
 * wildcard; allowing them now would need their own tests), plus "/" and "%".
 * normalizeRoutePath checks the rest.
 */
export const ROUTE_PATH_PATTERN = "^/[A-Za-z0-9\\-._~!$&'()+,=:@/%]*$";

export type Target = { path: string; query: string } | { error: string };
export type Normalized = string | { error: string };

// Optimization: most paths are plain; one regex test lets them through untouched, with no allocation.
const PLAIN = /^(?:\/[A-Za-z0-9\-_~!$&'()*+,=:@]+)*\/?$/;
// Literal characters a path may hold: pchar without ";" plus "/" and "%" (checked below).
const ALLOWED = /^[A-Za-z0-9\-._~!$&'()*+,=:@/%]*$/;
const NOT_ALLOWED = /[^A-Za-z0-9\-._~!$&'()*+,=:@/%]/;
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
// "%25" before two hex digits in the decoded path: a server that decodes twice reads another path.
const DOUBLE_ENCODED = /%25[0-9A-Fa-f]{2}/;
// Escapes that would change the structure of the path for some reader downstream.
const FORBIDDEN_ESCAPES = new Set([0x2f, 0x5c, 0x00, 0x3b, 0x3f, 0x23]);

const notUtf8 = () => ({ error: 'percent-encoding that does not decode to UTF-8 is refused' });

/** Splits and normalizes a request target (origin-form, or absolute-form from a proxy). */
export function normalizeTarget(target: string): Target {
  if (target.charCodeAt(0) !== 47 /* / */) {
    if (!/^https?:\/\//i.test(target)) return { error: 'the request target must be a path' };
    const slash = target.indexOf('/', target.indexOf('//') + 2);
    target = slash === -1 ? '/' : target.slice(slash);
  }
  if (target.includes('#')) return { error: 'a fragment is not allowed in the request target' };
  const q = target.indexOf('?');
  const raw = q === -1 ? target : target.slice(0, q);
  const query = q === -1 ? '' : target.slice(q + 1);
  const path = normalizePath(raw);
  return typeof path === 'string' ? { path, query } : path;
}

/** A request path (no query) as the gateway matches and forwards it: dot segments resolved, a trailing "/" kept. */
export function normalizePath(raw: string): Normalized {
  if (PLAIN.test(raw)) return raw;
  return normalizeSlow(raw, false);
}

/**
 * A route path as the route table holds it: the request-path rules, plus dot segments refused
 * and the trailing "/" dropped ("/" stays "/"). normalizePath(p) of any request path p a Prefix
 * route matches starts with what this returns.
 */
export function normalizeRoutePath(path: string): Normalized {
  if (path.charCodeAt(0) !== 47 /* / */) return { error: 'a route path must start with "/"' };
  const normalized = PLAIN.test(path) ? path : normalizeSlow(path, true);
  if (typeof normalized !== 'string') return normalized;
  return normalized.length > 1 && normalized.endsWith('/') ? normalized.slice(0, -1) : normalized;
}

/**
 * Why a path a route's rewrite puts in place (route-table rewrite.path.value) is refused, or
 * null: it must be written as a route path (the same refusals, dot segments included, escapes
 * as normalized), except that a trailing "/" is kept, as the back end is to see it.
 */
export function rewritePathProblem(value: string): string | null {
  const n = normalizeRoutePath(value);
  if (typeof n !== 'string') return n.error;
  const kept = n.length > 1 && value.endsWith('/') ? `${n}/` : n;
  return kept === value ? null : `must be written normalized, as ${JSON.stringify(kept)}`;
}

function normalizeSlow(raw: string, refuseDots: boolean): Normalized {
  if (!ALLOWED.test(raw)) {
    const c = NOT_ALLOWED.exec(raw)?.[0] ?? '';
    return { error: `${JSON.stringify(c)} is not allowed in a path` };
  }
  const input = raw.split('/');
  const out: string[] = [];
  for (let i = 1; i < input.length; i++) {
    const seg = input[i].includes('%') ? decodeSegment(input[i]) : input[i];
    if (typeof seg !== 'string') return seg;
    const last = i === input.length - 1;
    if (seg === '.' || seg === '..') {
      if (refuseDots) return { error: 'dot segments ("." or "..") are not allowed in a route path' };
      if (seg === '..') out.pop();
      if (last) out.push(''); // "/a/b/.." is "/a/": the trailing slash stays
    } else if (seg !== '' || last) {
      out.push(seg);
    }
  }
  return `/${out.join('/')}`;
}

/**
 * A segment of an upstream path built from request values (template lookups, each rendered
 * with encodeURIComponent: an aggregate's call path, the request-transformer's path rewrite),
 * read as the ingress reads a request path, so a value can only ever be text inside one
 * segment. Refused, with why: everything the ingress refuses in a segment (an encoded "/",
 * "\", NUL, ";", "?" or "#"; double encoding: a value "%2e" or "%2F" would be sent as "%252e",
 * "%252F", which a server that decodes twice reads as "." or "/"; overlong UTF-8), a dot
 * segment ("." or ".."; a back end that normalizes would climb, whatever escape it was sent
 * as), and a segment that becomes a dot segment or holds "/" or "\" under Unicode compatibility
 * mapping (NFKC, which some back ends apply: "．．", "／", "＼"; Windows best-fit conversion maps
 * these fullwidth forms the same way).
 * Returns null when the segment is safe.
 */
export function unsafeSegment(seg: string): string | null {
  const d = seg.includes('%') ? decodeSegment(seg) : seg;
  if (typeof d !== 'string') return d.error;
  if (d === '.' || d === '..') return 'a dot segment ("." or "..") is refused';
  if (NON_ASCII_ESCAPE.test(d)) {
    // decodeSegment has checked the bytes are UTF-8: this cannot throw.
    const text = decodeURIComponent(d).normalize('NFKC');
    if (text === '.' || text === '..' || text.includes('/') || text.includes('\\'))
      return 'a character that reads as ".", "/" or "\\" (Unicode compatibility mapping) is refused';
  }
  return null;
}

const NON_ASCII_ESCAPE = /%[89A-F]/;

/** The value of one hex digit, or -1. */
function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48; // 0-9
  if (c >= 65 && c <= 70) return c - 55; // A-F
  if (c >= 97 && c <= 102) return c - 87; // a-f
  return -1;
}

/**
 * Decodes the escapes of one segment: unreserved characters decoded, the rest kept as upper-case
 * escapes. The escaped bytes must form UTF-8 (Unicode Table 3-7: no overlong forms, no
 * surrogates, nothing above U+10FFFF, no lone or missing continuation bytes).
 */
function decodeSegment(seg: string): Normalized {
  let out = '';
  // UTF-8 state: continuation bytes still expected, and the range the next one must fall in.
  let need = 0;
  let lo = 0x80;
  let hi = 0xbf;
  for (let i = 0; i < seg.length; i++) {
    const c = seg.charCodeAt(i);
    if (c !== 37 /* % */) {
      if (need > 0) return notUtf8();
      out += seg[i];
      continue;
    }
    const h = hexValue(seg.charCodeAt(i + 1));
    const l = hexValue(seg.charCodeAt(i + 2));
    if (h < 0 || l < 0) return { error: 'invalid percent-encoding' };
    const byte = h * 16 + l;
    i += 2;
    if (need > 0) {
      if (byte < lo || byte > hi) return notUtf8();
      need--;
      lo = 0x80;
      hi = 0xbf;
    } else if (byte >= 0x80) {
      // 80-C1 (a continuation byte, or the lead of an overlong form) and F5-FF never start a character.
      if (byte < 0xc2 || byte > 0xf4) return notUtf8();
      need = byte < 0xe0 ? 1 : byte < 0xf0 ? 2 : 3;
      // The second byte is narrowed after E0 and F0 (overlong forms), ED (surrogates) and F4 (above U+10FFFF).
      if (byte === 0xe0) lo = 0xa0;
      else if (byte === 0xf0) lo = 0x90;
      else if (byte === 0xed) hi = 0x9f;
      else if (byte === 0xf4) hi = 0x8f;
    } else if (FORBIDDEN_ESCAPES.has(byte)) {
      return { error: `an encoded ${JSON.stringify(String.fromCharCode(byte))} is refused` };
    } else if (UNRESERVED.test(String.fromCharCode(byte))) {
      out += String.fromCharCode(byte);
      continue;
    }
    out += `%${seg[i - 1].toUpperCase()}${seg[i].toUpperCase()}`;
  }
  if (need > 0) return notUtf8();
  // Checked on the decoded segment, so digits that were escaped themselves ("%25%36%31") count too.
  if (out.includes('%25') && DOUBLE_ENCODED.test(out))
    return { error: 'double percent-encoding ("%25" before two hex digits) is refused' };
  return out;
}
