/**
 * HTTPRoute CORS filters as instances of the cors plugin (one definition of CORS in the data
 * plane), by Gateway API's rules:
 *   allowOrigins     → origins ("https://*.example.com": any labels in front, as the plugin's);
 *                      "*" → every origin: "*" without credentials, and with allowCredentials the
 *                      request's Origin echoed (the spec's rule, the plugin's originRegex ".+":
 *                      its own "*" refuses credentials, which browsers never accept beside "*");
 *   allowMethods     → methods ("*": any, answered with the method asked for); unset → the
 *                      CORS-safelisted GET, HEAD and POST;
 *   allowHeaders     → allowHeaders ("*": unset, the headers a preflight asks for answered back);
 *                      unset → none beyond the safelisted ones;
 *   exposeHeaders, allowCredentials → credentials, maxAge as they are; an allowed preflight is
 *   answered 200 (the spec allows 200 or 204; the conformance suite expects 200).
 * The result goes through the cors manifest's schema and checks here: what the plugin refuses is
 * UnsupportedValue naming the filter's field.
 */
import type { GRPCRoute, HTTPRoute, HTTPRouteFilter } from '../api/gateway-api.ts';
import { withSortedKeys } from '../../dataplane/config/canonical-json.ts';
import type { ModelPlugin } from '../validate/model.ts';
import { pluginConfigProblems } from '../validate/gateway-plugin.ts';
import { filterPlugin } from './header-filters.ts';

interface CorsFilter {
  allowOrigins?: string[];
  allowCredentials?: boolean;
  allowMethods?: string[];
  allowHeaders?: string[];
  exposeHeaders?: string[];
  maxAge?: number;
}

const SAFELISTED_METHODS = ['GET', 'HEAD', 'POST'];

function corsOf(f: HTTPRouteFilter): CorsFilter | undefined {
  return f.type === 'CORS' ? (f.cors as CorsFilter | undefined) : undefined;
}

function corsConfig(c: CorsFilter): Record<string, unknown> {
  const credentials = c.allowCredentials === true;
  const anyOrigin = c.allowOrigins?.includes('*') === true;
  const origins = anyOrigin
    ? credentials
      ? { originRegex: ['.+'] }
      : { origins: ['*'] }
    : { origins: (c.allowOrigins ?? []).map((o) => o.toLowerCase()) };
  const anyHeader = c.allowHeaders?.includes('*') === true;
  return withSortedKeys({
    ...origins,
    methods: c.allowMethods?.length ? [...c.allowMethods] : SAFELISTED_METHODS,
    ...(!anyHeader && { allowHeaders: [...(c.allowHeaders ?? [])] }),
    ...(c.exposeHeaders?.length && { exposeHeaders: [...c.exposeHeaders] }),
    ...(credentials && { credentials: true }),
    ...(c.maxAge !== undefined && { maxAge: c.maxAge }),
    preflightStatus: 200,
  });
}

/** Why a CORS filter cannot be served, or undefined. */
export function corsFilterProblem(f: HTTPRouteFilter): string | undefined {
  const c = corsOf(f);
  if (c === undefined) return 'CORS without its cors';
  const [first] = pluginConfigProblems('cors', corsConfig(c));
  return first && `cors: ${first.field ? `${first.field} ` : ''}${first.message}`;
}

/** The cors plugin instances of a rule's CORS filters (the CRD allows one). */
export function corsFilterPlugins(
  route: HTTPRoute | GRPCRoute,
  filters: readonly HTTPRouteFilter[] | undefined,
  i: number,
): ModelPlugin[] {
  return (filters ?? []).flatMap((f, j) => {
    const c = corsOf(f);
    if (c === undefined || corsFilterProblem(f)) return [];
    return [filterPlugin(route, i, j, 'cors', corsConfig(c))];
  });
}
