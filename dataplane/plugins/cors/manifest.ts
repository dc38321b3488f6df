/**
 * cors config: the Fetch standard's CORS protocol with the shape of Kong's cors plugin and
 * Envoy's CORS policy. Origins are exact serialized origins (`https://app.example.com:8443`),
 * `https://*.example.com` (one or more labels in front of example.com, never example.com itself),
 * or `*` alone; `originRegex` holds anchored patterns, compiled once and refused here when they
 * are invalid or could backtrack catastrophically. `credentials: true` with `*` is refused:
 * browsers never accept credentials with a wildcard origin.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { ConfigProblem } from '../../config/config-problem.ts';
import { HEADER_NAME_PATTERN, TOKEN_PATTERN } from '../../config/http-grammar.ts';
import { pluginManifest } from '../../config/manifest.ts';
import { ORIGIN_PATTERN } from '../../config/origins.ts';
import { regexProblem } from '../../config/regex.ts';

const NO_ORIGIN = 'set origins or originRegex (with neither, no origin is allowed)';
const STAR_NOT_ALONE = '"*" allows every origin and must be alone (no other origins, no originRegex)';
const STAR_WITH_CREDENTIALS =
  'cannot be true with origins "*" (browsers refuse credentials with a wildcard origin); list the origins';
const STAR_METHOD_NOT_ALONE = '"*" allows every method and must be alone';
const STAR_ALLOW_HEADER =
  '"*" is not supported; leave allowHeaders unset to allow the headers a preflight asks for';
const STAR_EXPOSE_HEADER = '"*" is only a header name with credentials: true (Fetch); list the headers';
const hasList = (f: string) => `(has(self.${f}) && size(self.${f}) > 0)`;

const headerNames = (description: string) =>
  Type.Optional(
    Type.Array(Type.String({ pattern: HEADER_NAME_PATTERN, maxLength: 128, description: 'A header name.' }), {
      maxItems: 64,
      description,
    }),
  );

export const CorsConfig = Type.Object(
  {
    origins: Type.Optional(
      Type.Array(
        Type.String({
          pattern: ORIGIN_PATTERN,
          maxLength: 300,
          description:
            'An exact origin ("https://app.example.com", lower case, no path), "https://*.example.com" ' +
            '(any subdomain, one or more labels deep; not example.com itself) or "*" (every origin, alone).',
        }),
        { maxItems: 256, description: 'Origins allowed to read responses.' },
      ),
    ),
    originRegex: Type.Optional(
      Type.Array(
        Type.String({
          minLength: 1,
          maxLength: 300,
          description: 'A regular expression, anchored at both ends.',
        }),
        {
          maxItems: 32,
          description:
            'Regular expressions (JavaScript syntax) an allowed origin matches whole (they are anchored). ' +
            'Patterns that could backtrack catastrophically are refused.',
        },
      ),
    ),
    methods: Type.Optional(
      Type.Array(Type.String({ pattern: TOKEN_PATTERN, maxLength: 32, description: 'A method, e.g. PUT.' }), {
        minItems: 1,
        maxItems: 32,
        description:
          'Methods a preflight may ask for (default GET, HEAD, POST, PUT, PATCH, DELETE); "*" alone: any, ' +
          'answered with the method asked for.',
      }),
    ),
    allowHeaders: Type.Optional(
      Type.Array(
        Type.String({
          pattern: HEADER_NAME_PATTERN,
          maxLength: 128,
          description: 'A header name ("*" is not supported).',
          'x-kubernetes-validations': [{ rule: "self != '*'", message: STAR_ALLOW_HEADER }],
        }),
        {
          maxItems: 64,
          description:
            'Request headers a preflight may ask for. Unset: the headers the preflight asks for are allowed.',
        },
      ),
    ),
    exposeHeaders: headerNames('Response headers the page may read beyond the CORS-safelisted ones.'),
    credentials: Type.Optional(
      Type.Boolean({
        description: 'Allow cookies and HTTP authentication (Access-Control-Allow-Credentials: true).',
      }),
    ),
    maxAge: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 86_400,
        description: 'Seconds a browser may cache a preflight answer (Access-Control-Max-Age).',
      }),
    ),
    preflightStatus: Type.Optional(
      Type.Union([Type.Literal(200), Type.Literal(204)], {
        description:
          'Status of an allowed preflight (default 204, no content; 200 for clients that expect it, as ' +
          "Gateway API's conformance suite does).",
      }),
    ),
    privateNetwork: Type.Optional(
      Type.Boolean({
        description:
          'Answer Private Network Access preflights (Access-Control-Allow-Private-Network: true): ' +
          'pages on public sites may call this gateway on a private network.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'Cross-origin requests from browsers.',
    // The API server's copy of checkCorsConfig's rules across fields (regular expressions are
    // checked by the controller only: CEL's RE2 is not JavaScript's).
    'x-kubernetes-validations': [
      { rule: `${hasList('origins')} || ${hasList('originRegex')}`, message: NO_ORIGIN },
      {
        rule: `!has(self.origins) || !('*' in self.origins) || (size(self.origins) == 1 && !${hasList('originRegex')})`,
        message: STAR_NOT_ALONE,
        fieldPath: '.origins',
      },
      {
        rule: "!has(self.methods) || !('*' in self.methods) || size(self.methods) == 1",
        message: STAR_METHOD_NOT_ALONE,
        fieldPath: '.methods',
      },
      {
        rule: "!has(self.credentials) || !self.credentials || !has(self.origins) || !('*' in self.origins)",
        message: STAR_WITH_CREDENTIALS,
        fieldPath: '.credentials',
      },
      {
        rule: "!has(self.credentials) || !self.credentials || !has(self.exposeHeaders) || !('*' in self.exposeHeaders)",
        message: STAR_EXPOSE_HEADER,
        fieldPath: '.exposeHeaders',
      },
    ],
  },
);
export type CorsConfig = Static<typeof CorsConfig>;

export function checkCorsConfig(config: CorsConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const origins = config.origins ?? [];
  const regex = config.originRegex ?? [];
  const any = origins.includes('*');
  if (origins.length === 0 && regex.length === 0) problems.push({ field: '', message: NO_ORIGIN });
  if (any && (origins.length > 1 || regex.length > 0))
    problems.push({ field: 'origins', message: STAR_NOT_ALONE });
  if (any && config.credentials) problems.push({ field: 'credentials', message: STAR_WITH_CREDENTIALS });
  const methods = config.methods ?? [];
  if (methods.includes('*') && methods.length > 1)
    problems.push({ field: 'methods', message: STAR_METHOD_NOT_ALONE });
  regex.forEach((pattern, i) => {
    const problem = regexProblem(pattern);
    if (problem) problems.push({ field: `originRegex[${i}]`, message: problem });
  });
  (config.allowHeaders ?? []).forEach((h, i) => {
    if (h === '*') problems.push({ field: `allowHeaders[${i}]`, message: STAR_ALLOW_HEADER });
  });
  if (config.credentials)
    (config.exposeHeaders ?? []).forEach((h, i) => {
      if (h === '*') problems.push({ field: `exposeHeaders[${i}]`, message: STAR_EXPOSE_HEADER });
    });
  return problems;
}

export const manifest = pluginManifest({
  name: 'cors',
  phase: 'cors-preflight',
  schema: CorsConfig,
  checks: checkCorsConfig,
});
