/**
 * redirect: the route answers a redirection itself, with no upstream and an empty body (Gateway
 * API's RequestRedirect filter, HTTPRequestRedirectFilter). The Location is the request's URL
 * with what the entry says replaced: the scheme, the host name, the port, the path; the query is
 * kept. Only Gateway API rules compile to it for now (no GatewayRoute field).
 */
import { type Static, Type } from '@sinclair/typebox';
import type { ConfigProblem } from '../../config/config-problem.ts';
import { HOST_NAME } from '../../config/http-grammar.ts';
import { handlerManifest } from '../../config/manifest.ts';
import { normalizePath } from '../../config/path-grammar.ts';

/** The redirection statuses Gateway API allows (301 and 302 may turn a POST into a GET; 307 and 308 keep it). */
export const REDIRECT_STATUSES = [301, 302, 303, 307, 308] as const;

export const RedirectPath = Type.Object(
  {
    /**
     * ReplaceFullPath: the Location's path is `value`. ReplacePrefixMatch: the part of the request
     * path the route's Prefix match covers is replaced by `value` ("/old/a" with the match "/old"
     * and "/new" → "/new/a"; a trailing "/" of `value` is ignored); only on a route with a Prefix match.
     */
    type: Type.Union([Type.Literal('ReplaceFullPath'), Type.Literal('ReplacePrefixMatch')]),
    /** A path as the gateway forwards one (normalized: starts with "/", no dot segments, no "//"). */
    value: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  { additionalProperties: false },
);

export const RedirectHandler = Type.Object(
  {
    type: Type.Literal('redirect'),
    /** The answer's status. */
    statusCode: Type.Union(REDIRECT_STATUSES.map((s) => Type.Literal(s))),
    /**
     * The Location's scheme; absent: the request's (https on a TLS listener, else http). When
     * given without a port, the port is the scheme's well-known one (80, 443), as the spec says.
     */
    scheme: Type.Optional(Type.Union([Type.Literal('http'), Type.Literal('https')])),
    /** The Location's host name; absent: the request's Host without its port. */
    hostname: Type.Optional(Type.String({ minLength: 1, maxLength: 253 })),
    /**
     * The Location's port; absent: the scheme's well-known port when `scheme` is given, else the
     * port of the request's Host (the listener's port as the client reached it). Left out of the
     * Location when it is the scheme's well-known port.
     */
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
    /** How the Location's path is made; absent: the request's path. */
    path: Type.Optional(RedirectPath),
  },
  { additionalProperties: false },
);
export type RedirectHandler = Static<typeof RedirectHandler>;

export const manifest = handlerManifest({
  kind: 'redirect',
  schema: RedirectHandler,
  upstreams: () => [],
  checks: (h, route) => {
    const problems: ConfigProblem[] = [];
    if (h.hostname !== undefined && !HOST_NAME.test(h.hostname))
      problems.push({
        field: 'hostname',
        message: `not a lower-case host name: ${JSON.stringify(h.hostname)}`,
      });
    if (h.path !== undefined) {
      const v = h.path.value;
      if (!v.startsWith('/') || normalizePath(v) !== v)
        problems.push({
          field: 'path.value',
          message: `${JSON.stringify(v)} is not a normalized path (starting with "/", no dot segments, no "//", pchar only)`,
        });
      if (h.path.type === 'ReplacePrefixMatch' && route.match.path.type !== 'Prefix')
        problems.push({
          field: 'path.type',
          message: 'ReplacePrefixMatch needs a route with a Prefix path match',
        });
    }
    return problems;
  },
});
