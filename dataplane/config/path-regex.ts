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

/** A capture reference of a rewrite with captures: "$1" … "$9", as nginx's rewrite reads them. */
export const CAPTURE_REF = /\$([1-9])/;

/** How many capture groups a path regex has (its match against "" through an empty alternative). */
export function captureGroups(source: string): number {
  return new RegExp(`${source}|`).exec('')!.length - 1;
}

/**
 * Why `value` cannot be the path a rewrite builds from the captures of a path with `groups`
 * capture groups, or undefined: every "$" starts a reference $1 … $9, and each names a group
 * there is (nginx would refuse the configuration otherwise).
 */
export function captureRefsProblem(value: string, groups: number): string | undefined {
  if (/\$(?![1-9])/.test(value)) return '"$" must start a capture reference, $1 to $9';
  for (const m of value.matchAll(new RegExp(CAPTURE_REF, 'g')))
    if (Number(m[1]) > groups)
      return `refers to $${m[1]}, but the path has ${groups} capture group${groups === 1 ? '' : 's'}`;
  return undefined;
}
