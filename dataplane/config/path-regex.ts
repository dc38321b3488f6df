/**
 * A route path written as a regular expression (an Ingress path under ingress-nginx's
 * use-regex): matched as the `location ~*` ingress-nginx writes for it, case-insensitive and
 * anchored at the start of the path only ("/api/v[0-9]+" takes /api/v2/users too), against the
 * normalized request path. One definition for the controller (which refuses a bad one, naming
 * its object) and the data plane (which checks it again at the door and matches with it).
 */
import { regexProblem } from './regex.ts';

export function pathRegex(source: string): RegExp {
  return new RegExp(`^(?:${source})`, 'i');
}

/** Why a pattern cannot be a route path, or undefined. */
export function pathRegexProblem(source: string): string | undefined {
  if (!source.startsWith('/')) return 'must start with "/"';
  return regexProblem(source, pathRegex);
}
