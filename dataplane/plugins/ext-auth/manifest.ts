/**
 * ext-auth config: external authentication, as ingress-nginx's auth-url (nginx's auth_request).
 * Every request is first sent, without its body, to `url`; a 2xx answer lets it through (with
 * `responseHeaders` of that answer copied onto it), 401 and 403 are passed back to the client
 * (401 as a redirect to `signin` when set), anything else (another status, no answer within
 * `timeout`) is a 500.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { ConfigProblem } from '../../config/config-problem.ts';
import { DURATION_PATTERN, parseDuration } from '../../config/duration.ts';
import { HEADER_NAME_PATTERN, HEADER_VALUE_PATTERN, TOKEN_PATTERN } from '../../config/http-grammar.ts';
import { pluginManifest } from '../../config/manifest.ts';

/** The request variables `signin` may hold, as nginx names them (expanded per request). */
export const SIGNIN_VARIABLES = ['$host', '$scheme', '$request_uri', '$escaped_request_uri'] as const;

const MAX_TIMEOUT_MS = 60_000;

export const ExtAuthConfig = Type.Object(
  {
    url: Type.String({
      pattern: '^https?://[^$\\s]+$',
      maxLength: 2048,
      description: 'The authentication service: every request is first sent here (without its body).',
    }),
    method: Type.Optional(
      Type.String({
        pattern: TOKEN_PATTERN,
        maxLength: 32,
        description: 'The method of that call (default GET).',
      }),
    ),
    timeout: Type.Optional(
      Type.String({
        pattern: DURATION_PATTERN,
        maxLength: 32,
        description:
          'Time allowed for the whole call (default 5s, at most 60s); past it the request gets 500.',
      }),
    ),
    responseHeaders: Type.Optional(
      Type.Array(
        Type.String({ pattern: HEADER_NAME_PATTERN, maxLength: 128, description: 'A header name.' }),
        {
          maxItems: 32,
          description:
            "Headers of the service's 2xx answer sent upstream on the request; a client's copy is always removed.",
        },
      ),
    ),
    signin: Type.Optional(
      Type.String({
        pattern: '^(https?://|/)[^\\s]*$',
        maxLength: 2048,
        description:
          'On 401, redirect (302) the client here instead, the original URL in the rd parameter; $host, $scheme, $request_uri and $escaped_request_uri are expanded.',
      }),
    ),
    signinRedirectParam: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9_.~-]+$',
        maxLength: 64,
        description: 'The parameter of signin that carries the original URL (default rd).',
      }),
    ),
    requestRedirect: Type.Optional(
      Type.String({
        pattern: HEADER_VALUE_PATTERN,
        maxLength: 2048,
        description: 'X-Auth-Request-Redirect sent to the service (default: the request URI).',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'External authentication: a sub-request to a service decides (auth_request, ingress-nginx auth-url).',
  },
);
export type ExtAuthConfig = Static<typeof ExtAuthConfig>;

function checkExtAuth(c: ExtAuthConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (c.timeout !== undefined) {
    const ms = parseDuration(c.timeout) ?? 0;
    if (ms < 1 || ms > MAX_TIMEOUT_MS)
      problems.push({ field: 'timeout', message: 'must be from 1ms to 60s' });
  }
  const unknown = (c.signin?.match(/\$[A-Za-z_]+/g) ?? []).filter(
    (v) => !(SIGNIN_VARIABLES as readonly string[]).includes(v),
  );
  if (unknown.length)
    problems.push({
      field: 'signin',
      message: `${unknown.join(', ')} is not expanded (only ${SIGNIN_VARIABLES.join(', ')} are)`,
    });
  return problems;
}

export const manifest = pluginManifest({
  name: 'ext-auth',
  phase: 'authenticate',
  schema: ExtAuthConfig,
  checks: checkExtAuth,
});
