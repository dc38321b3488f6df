/**
 * A deprecated API version (a route's `deprecation`, compiled from spec.versions[].deprecation):
 * every response carries Deprecation (RFC 9745), Sunset (RFC 8594) and the Link to the migration
 * document. Two built-in steps (builtin-steps.ts): the request hook runs first in the chain
 * (phase 'version') and sets them on the response object, so the gateway's own answers (401, 429,
 * 502, …) carry them too; the response hook runs last (phase 'final-headers') and puts them on
 * the upstream's headers, which would otherwise replace them (an upstream Link is kept, ours
 * appended), after every plugin's response hook so they are final.
 * From the sunset on, a version marked goneAfterSunset answers 410: one number compared per request.
 */
import type { RouteDeprecation } from '../config/route-table.ts';
import { answerProblem } from '../pipeline/answer.ts';
import type { RequestHook, ResponseHook } from '../pipeline/context.ts';

/** Deprecation and Sunset: the same values on every response of the version. */
function fixedHeaders(d: RouteDeprecation): [string, string][] {
  const fixed: [string, string][] = [['deprecation', d.deprecation]];
  if (d.sunset !== undefined) fixed.push(['sunset', d.sunset]);
  return fixed;
}

export function deprecationRequestHook(d: RouteDeprecation): RequestHook {
  const fixed = fixedHeaders(d);
  const link = d.link;
  const goneAtMs = d.goneAtMs ?? Number.POSITIVE_INFINITY;
  const detail = `This version was retired on ${d.sunset}${link ? '; see the Link header for its successor' : ''}`;
  return (ctx) => {
    const res = ctx.res;
    for (const [name, value] of fixed) res.setHeader(name, value);
    if (link !== undefined) res.setHeader('link', link);
    if (Date.now() >= goneAtMs) answerProblem(ctx, 'SLC_ERR_VERSION_GONE', { detail });
  };
}

export function deprecationResponseHook(d: RouteDeprecation): ResponseHook {
  const fixed = fixedHeaders(d);
  const link = d.link;
  return (_ctx, headers) => {
    for (const [name, value] of fixed) headers[name] = value;
    if (link === undefined) return;
    const theirs = headers.link;
    headers.link = theirs === undefined ? link : [...(Array.isArray(theirs) ? theirs : [theirs]), link];
  };
}
