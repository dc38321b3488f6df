/**
 * The gateway's own steps: behaviours a route's entry asks for by a field rather than by a
 * GatewayPlugin. Each is declared once here, with a name (in the route's `chain`) and a phase in
 * the one phase order (config/phases.ts), and buildRuntime binds and orders it with the route's
 * plugins by the same code, so where it runs is its phase, not a splice.
 */
import type { Phase } from '../config/phases.ts';
import type { Route } from '../config/route-table.ts';
import { httpsRedirectHook } from '../pipeline/https-redirect.ts';
import type { RuntimeDeps } from '../pipeline/route.ts';
import type { PluginHooks } from '../plugins/types.ts';
import { deprecationRequestHook, deprecationResponseHook } from './deprecation.ts';

export interface BuiltinStep {
  name: string;
  phase: Phase;
  /** Its hooks on the route, or null when the route's entry does not ask for it. */
  bind(entry: Route, deps: RuntimeDeps): PluginHooks | null;
}

export const BUILTIN_STEPS: readonly BuiltinStep[] = [
  {
    name: 'https-redirect',
    phase: 'redirect',
    bind: (entry, deps) =>
      entry.httpsRedirect ? { onRequest: httpsRedirectHook(deps.httpsRedirectPort ?? 443) } : null,
  },
  {
    name: 'deprecation',
    phase: 'version',
    bind: (entry) => (entry.deprecation ? { onRequest: deprecationRequestHook(entry.deprecation) } : null),
  },
  {
    // Gateway API's URLRewrite hostname: the Host the upstream gets (undici sends a request's
    // `host` header in place of the origin's). After the route's transformers, which never see it.
    name: 'rewrite-host',
    phase: 'transform-request',
    bind: (entry) => {
      const host = entry.rewrite?.hostname;
      if (host === undefined) return null;
      return {
        onRequest: (ctx) => {
          ctx.headers.host = host;
        },
      };
    },
  },
  {
    name: 'deprecation-headers',
    phase: 'final-headers',
    bind: (entry) => (entry.deprecation ? { onResponse: deprecationResponseHook(entry.deprecation) } : null),
  },
];
