/**
 * Request values that must never stand in an upstream path segment (config/path-grammar.ts,
 * unsafeSegment): dot segments and path separators in every spelling a back end may decode them
 * from. Tests send each one as a header (when it is a valid header value) and as a query value.
 */
export const UNSAFE_PATH_VALUES: readonly string[] = [
  // dot segments, plain and percent-encoded in any case, mixed, double- and triple-encoded
  '.',
  '..',
  '%2e',
  '%2E',
  '%2e%2e',
  '%2E%2E',
  '.%2e',
  '%2E.',
  '%252e',
  '%252E%252e',
  '%25252e%25252e',
  '..;', // Tomcat and Jetty read "..;x" as ".."
  '..;jsessionid=1',
  // separators, literal, encoded in any case, double-encoded
  '/',
  '../admin',
  'a/b',
  '\\',
  '..\\admin',
  '%2f',
  '%2F',
  '%5c',
  '%5C',
  '..%2fadmin',
  '%252f',
  '%255C',
  // overlong UTF-8 spellings of "." and "/" (never valid, made to slip past decoders)
  '%c0%ae%c0%ae',
  '%c0%af',
  '%e0%80%ae',
  // what Unicode compatibility mapping (NFKC, Windows best-fit) turns into ".", "/" or "\"
  '．．',
  '／',
  'a＼b',
];

/** Values near those that stay one segment: a dot inside a name, escapes of other characters. */
export const SAFE_PATH_VALUES: readonly string[] = ['.hidden', 'a..b', 'v1.2', 'a b@c:d=e&f', 'café', '100%'];

/** Whether `v` can travel as a header value (undici refuses what is not Latin-1 field text). */
export const headerSafe = (v: string): boolean => /^[\x20-\x7e]*$/.test(v);
