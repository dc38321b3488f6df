/**
 * The one way configuration regular expressions are checked (cors originRegex, route query
 * matches, regular-expression route paths: path-regex.ts compiles those its own way) and, but
 * for route paths, compiled: anchored, so a pattern matches a whole value (`a\.com` never matches
 * `a.com.evil`), and refused when it does not compile or could backtrack catastrophically
 * (safe-regex2: nested or repeated quantifiers), as a request-time value must never stall a worker.
 */
import safeRegex from 'safe-regex2';

export const anchoredRegex = (pattern: string): RegExp => new RegExp(`^(?:${pattern})$`);

/** Why the pattern cannot be served, or undefined; `compile` as it will be compiled. */
export function regexProblem(
  pattern: string,
  compile: (p: string) => RegExp = anchoredRegex,
): string | undefined {
  try {
    compile(pattern);
  } catch (err) {
    return `is not a valid regular expression (${(err as Error).message})`;
  }
  if (!safeRegex(pattern))
    return 'could backtrack catastrophically (nested or repeated quantifiers); rewrite it';
  return undefined;
}
