/**
 * A GatewayRoute is accepted when its spec fits GatewayRouteSpec and passes the rules the
 * CRD states in CEL (which TypeBox does not run, and a file never met): exactly one of
 * url/backendRef, an absolute http(s) url, unique route names, balance only with a backendRef
 * (balance.ts); its versions (versions.ts) and
 * the handler kinds its rules choose (handlers.ts).
 */
import { MAX_TIMEOUT_MS, parseDuration } from '../../dataplane/config/duration.ts';
import { regexProblem } from '../../dataplane/config/regex.ts';
import { type GatewayRoute, GatewayRouteSpec } from '../api/gateway-route.ts';
import { refOf } from '../source/resource-set.ts';
import { balanceOf } from './balance.ts';
import { type Diagnostic, invalid } from './diagnostic.ts';
import { checkMetadata } from './metadata.ts';
import type { ModelRoute } from './model.ts';
import { compileSchema, schemaErrors } from './schema-errors.ts';
import { resolveServiceUrl } from './service-url.ts';
import { validateHandlers } from './handlers.ts';
import { validateVersions } from './versions.ts';

const checkSpec = compileSchema(GatewayRouteSpec);

/** The route (references not yet resolved), or the reasons it is not accepted. */
export function validateRoute(obj: GatewayRoute): { route?: ModelRoute; diagnostics: Diagnostic[] } {
  const ref = refOf(obj);
  const { meta, diagnostics } = checkMetadata(ref, obj.metadata);
  const spec: unknown = obj.spec;
  if (spec === undefined) return { diagnostics: [...diagnostics, invalid(ref, 'spec', 'required')] };
  const specErrors = schemaErrors(checkSpec, spec, ['spec']);
  diagnostics.push(...specErrors.map((e) => invalid(ref, e.field, e.message)));
  if (specErrors.length) return { diagnostics };

  const checked = spec as GatewayRoute['spec'];
  const target = resolveServiceUrl(ref, checked.service);
  diagnostics.push(...target.diagnostics);
  const balance = balanceOf(ref, checked.service, 'spec.service', diagnostics);
  if (checked.service.outlierDetection !== undefined && checked.service.backendRef === undefined)
    diagnostics.push(
      invalid(
        ref,
        'spec.service.outlierDetection',
        'applies only with backendRef: spec.service.url has no endpoints to eject',
      ),
    );
  const firstIndex = new Map<string, number>();
  checked.routes.forEach((r, i) => {
    const first = firstIndex.get(r.name);
    if (first === undefined) firstIndex.set(r.name, i);
    else
      diagnostics.push(
        invalid(
          ref,
          `spec.routes[${i}].name`,
          `route name "${r.name}" is already used by spec.routes[${first}]`,
        ),
      );
  });
  checked.routes.forEach((r, i) => {
    r.headers?.forEach((h, j) => {
      const problem = h.type === 'RegularExpression' ? regexProblem(h.value) : undefined;
      if (problem) diagnostics.push(invalid(ref, `spec.routes[${i}].headers[${j}].value`, problem));
    });
    r.query?.forEach((q, j) => {
      const problem = q.type === 'RegularExpression' ? regexProblem(q.value) : undefined;
      if (problem) diagnostics.push(invalid(ref, `spec.routes[${i}].query[${j}].value`, problem));
    });
    const idle = r.websocket?.idleTimeout;
    const ms = idle === undefined ? 0 : parseDuration(idle);
    if (ms === undefined || ms > MAX_TIMEOUT_MS)
      diagnostics.push(
        invalid(
          ref,
          `spec.routes[${i}].websocket.idleTimeout`,
          `${JSON.stringify(idle)} must be a duration of at most 596h`,
        ),
      );
  });
  const versions = validateVersions(ref, checked, target.url, balance);
  diagnostics.push(...versions.diagnostics);
  const handlers = validateHandlers(ref, checked.routes);
  diagnostics.push(...handlers.diagnostics);
  if (diagnostics.length || target.url === undefined) return { diagnostics };
  return {
    route: {
      ref,
      source: meta.source,
      createdMs: meta.createdMs,
      spec: checked,
      upstreamUrl: target.url,
      ...(balance && { balance }),
      handlers: handlers.handlers,
      ...(versions.versions && { versions: versions.versions }),
      certificates: [],
    },
    diagnostics,
  };
}
