/**
 * Pass 2: route paths in the form the data plane matches against. Its ingress normalizes
 * request paths (dataplane/server/normalize-path.ts); a route path must be normalized the same
 * way or it could never match: duplicate and trailing slashes dropped (Prefix matching is on
 * segment boundaries, so "/a/" and "/a" match the same requests), escapes of unreserved
 * characters decoded and other escapes upper-cased. A dot segment, or an escape the data plane
 * refuses, is an error: it either never matches or reads differently to someone downstream.
 */
import { type Diagnostic, invalid } from '../validate/diagnostic.ts';
import { type Draft, type Pass, pathField, rejectObjects } from './draft.ts';

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
const HEX = /^[0-9A-Fa-f]{2}$/;
// The same escapes the data plane refuses in a request path: "/", "\", NUL, ";", "?", "#".
const FORBIDDEN_ESCAPES = new Set([0x2f, 0x5c, 0x00, 0x3b, 0x3f, 0x23]);

export const normalizePaths: Pass = (state) => {
  const errors: Diagnostic[] = [];
  const drafts: Draft[] = [];
  for (const d of state.drafts) {
    const value = normalizeRoutePath(d.match.path.value);
    if (typeof value === 'string')
      drafts.push({ ...d, match: { ...d.match, path: { ...d.match.path, value } } });
    else
      errors.push(
        invalid(d.route.ref, pathField(d), `${JSON.stringify(d.match.path.value)}: ${value.error}`),
      );
  }
  return rejectObjects({ ...state, drafts }, errors);
};

export function normalizeRoutePath(path: string): string | { error: string } {
  const segments: string[] = [];
  for (const raw of path.split('/')) {
    if (raw === '') continue;
    const seg = raw.includes('%') ? decodeSegment(raw) : raw;
    if (typeof seg !== 'string') return seg;
    if (seg === '.' || seg === '..')
      return { error: 'dot segments ("." or "..") are not allowed in a route path' };
    segments.push(seg);
  }
  return `/${segments.join('/')}`;
}

function decodeSegment(seg: string): string | { error: string } {
  let out = '';
  for (let i = 0; i < seg.length; i++) {
    if (seg[i] !== '%') {
      out += seg[i];
      continue;
    }
    const hex = seg.slice(i + 1, i + 3);
    if (!HEX.test(hex)) return { error: 'invalid percent-encoding' };
    const code = Number.parseInt(hex, 16);
    if (FORBIDDEN_ESCAPES.has(code))
      return { error: `an encoded ${JSON.stringify(String.fromCharCode(code))} is refused` };
    const ch = String.fromCharCode(code);
    out += UNRESERVED.test(ch) ? ch : `%${hex.toUpperCase()}`;
    i += 2;
  }
  return out;
}
