/**
 * Pass 2: route paths in the form the data plane matches against. Its ingress normalizes
 * request paths with the same grammar (dataplane/config/path-grammar.ts), so a route path is
 * normalized the same way or it could never match: duplicate and trailing slashes dropped
 * (Prefix matching is on segment boundaries, so "/a/" and "/a" match the same requests),
 * escapes of unreserved characters decoded and other escapes upper-cased. A dot segment, or
 * anything the ingress refuses in a request path, is an error naming the object and field: it
 * either never matches or reads differently to someone downstream.
 */
import { normalizeRoutePath } from '../../dataplane/config/path-grammar.ts';
import { type Diagnostic, invalid } from '../validate/diagnostic.ts';
import { type Draft, type Pass, pathField, rejectObjects } from './draft.ts';

export const normalizePaths: Pass = (state) => {
  const errors: Diagnostic[] = [];
  const drafts: Draft[] = [];
  for (const d of state.drafts) {
    // A regular expression is matched against the normalized request path as it is.
    if (d.match.path.type === 'RegularExpression') {
      drafts.push(d);
      continue;
    }
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
