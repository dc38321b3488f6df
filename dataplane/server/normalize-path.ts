/**
 * One reading of the path (ARCHITECTURE §6.1 rule 2): the request target is normalized once
 * at ingress and that same path is matched, given to plugins and forwarded. Percent-encoded
 * unreserved characters are decoded, other escapes upper-cased, dot segments removed and
 * duplicate slashes collapsed. What two servers could read differently is refused: an encoded
 * "/", "\", NUL, ";", "?" or "#", a literal "\" or ";", double encoding ("%2561"), invalid
 * escapes, a fragment.
 */

export type Target = { path: string; query: string } | { error: string };

// Optimization: most paths are plain; one regex test lets them through untouched.
const PLAIN = /^(?:\/[A-Za-z0-9\-_~!$&'()*+,=:@]+)*\/?$/;
// Literal characters a path may hold: pchar without ";" plus "/" and "%" (checked below).
const ALLOWED = /^[A-Za-z0-9\-._~!$&'()*+,=:@/%]*$/;
const HEX = /^[0-9A-Fa-f]{2}$/;
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
// Escapes that would change the structure of the path for some reader downstream.
const FORBIDDEN_ESCAPES = new Set([0x2f, 0x5c, 0x00, 0x3b, 0x3f, 0x23]);

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

export function normalizePath(raw: string): string | { error: string } {
  if (PLAIN.test(raw)) return raw;
  if (!ALLOWED.test(raw))
    return { error: 'the path holds a character that is not allowed (such as "\\" or ";")' };
  const input = raw.split('/');
  const out: string[] = [];
  for (let i = 1; i < input.length; i++) {
    const seg = input[i].includes('%') ? decodeSegment(input[i]) : input[i];
    if (typeof seg !== 'string') return seg;
    const last = i === input.length - 1;
    if (seg === '.' || seg === '..') {
      if (seg === '..') out.pop();
      if (last) out.push(''); // "/a/b/.." is "/a/": the trailing slash stays
    } else if (seg !== '' || last) {
      out.push(seg);
    }
  }
  return `/${out.join('/')}`;
}

function decodeSegment(seg: string): string | { error: string } {
  let out = '';
  for (let i = 0; i < seg.length; i++) {
    const c = seg[i];
    if (c !== '%') {
      out += c;
      continue;
    }
    const hex = seg.slice(i + 1, i + 3);
    if (!HEX.test(hex)) return { error: 'the path holds an invalid percent-encoding' };
    const code = Number.parseInt(hex, 16);
    if (FORBIDDEN_ESCAPES.has(code))
      return {
        error: `the path holds an encoded ${JSON.stringify(String.fromCharCode(code))}, which is refused`,
      };
    // "%25" before two hex digits is double encoding: a server that decodes twice reads another path.
    if (code === 0x25 && HEX.test(seg.slice(i + 3, i + 5)))
      return { error: 'the path holds a double percent-encoding, which is refused' };
    const ch = String.fromCharCode(code);
    out += UNRESERVED.test(ch) ? ch : `%${hex.toUpperCase()}`;
    i += 2;
  }
  return out;
}
