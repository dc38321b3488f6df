/**
 * build: the whole pure pipeline on one screen. ResourceSet → validate → compile → snapshot,
 * and the Accepted / ResolvedRefs conditions of every GatewayRoute and GatewayPlugin. No clock
 * (the status writer adds lastTransitionTime), no I/O, no environment, no randomness.
 */
import type { Condition } from './api/common.ts';
import { compile } from './compile/index.ts';
import { type GatewayApiResult, translateGatewayApi } from './gateway-api/index.ts';
import type { PortRange } from './gateway-api/ports.ts';
import { type IngressReport, translateIngresses } from './ingress/index.ts';
import { snapshotOf } from './snapshot/snapshot.ts';
import { type ResourceSet, refKey, refOf } from './source/resource-set.ts';
import type { Snapshot } from '../dataplane/config/route-table.ts';
import type { ConditionType, Diagnostic } from './validate/diagnostic.ts';
import { validate } from './validate/index.ts';
import { generationOf } from './validate/metadata.ts';
import { pluginRefsOf } from './validate/plugin-refs.ts';

/** A condition as build computes it; the status writer adds lastTransitionTime when it changes. */
export type ComputedCondition = Omit<Condition, 'lastTransitionTime'>;

export interface ObjectStatus {
  observedGeneration: number;
  conditions: [accepted: ComputedCondition, resolvedRefs: ComputedCondition];
  /** A GatewayPlugin's: how many GatewayRoutes of its namespace reference it (`kubectl get gwp`'s ROUTES). */
  routes?: number;
}

export interface BuildResult {
  snapshot: Snapshot;
  /** By "Kind/namespace/name" (refKey), in key order. Secrets get none: they are not ours to write. */
  status: Record<string, ObjectStatus>;
  /** Every problem found, grouped by object (key order), in the order found within an object. */
  diagnostics: Diagnostic[];
  /** The status of the Gateway API objects Sluice serves, and the Service each Gateway needs. */
  gatewayApi: Pick<GatewayApiResult, 'status' | 'services'>;
  /**
   * Sluice's Ingresses by "namespace/name" (key order), each with what of it is not served: what
   * the translation found and compile's diagnostics of it (a conflict), for Warning Events.
   */
  ingress: ReadonlyMap<string, IngressReport>;
}

export interface BuildOptions {
  gatewayPorts?: PortRange;
  /** The GatewayClass controllerName served (default sluice.dev/gateway-controller). */
  gatewayControllerName?: string;
  /** Serve Sluice's Ingresses (default true) of this class name (default sluice). */
  ingress?: boolean;
  ingressClass?: string;
}

export function build(resources: ResourceSet, opts: BuildOptions = {}): BuildResult {
  const validated = validate(resources);
  // Gateway API objects and Ingresses join the same model: one compile serves them all
  // (controller/gateway-api/, controller/ingress/), with one precedence.
  const gw = translateGatewayApi(resources, validated.model.plugins, {
    ports: opts.gatewayPorts,
    controllerName: opts.gatewayControllerName,
  });
  const ing =
    opts.ingress === false
      ? { routes: [], plugins: new Map(), ingresses: new Map<string, IngressReport>() }
      : translateIngresses(resources, { className: opts.ingressClass });
  const plugins = gw.plugins.size || ing.plugins.size;
  const more = [...gw.routes, ...ing.routes];
  const compiled = compile({
    ...validated.model,
    ...(plugins && { plugins: new Map([...validated.model.plugins, ...gw.plugins, ...ing.plugins]) }),
    routes: more.length ? [...validated.model.routes, ...more] : validated.model.routes,
    ...(gw.listeners.length && { gateway: { listeners: gw.listeners, certificates: gw.certificates } }),
  });
  const diagnostics = byObject([...validated.diagnostics, ...compiled.diagnostics]);
  // Optimization: diagnostics grouped by object once, and sort keys computed once per object:
  // filtering every diagnostic for every object made 10,000 conflicting routes take ~15 s.
  const found = new Map<string, Diagnostic[]>();
  for (const d of diagnostics) {
    const key = refKey(d.object);
    const list = found.get(key);
    if (list === undefined) found.set(key, [d]);
    else list.push(d);
  }
  const status: Record<string, ObjectStatus> = {};
  const owned = [...resources.plugins.values(), ...resources.routes.values()].map((obj) => ({
    obj,
    key: refKey(refOf(obj)),
  }));
  const users = routesUsing(resources);
  for (const { obj, key } of owned.sort((a, b) => compareText(a.key, b.key))) {
    status[key] = statusOf(generationOf(obj.metadata), found.get(key) ?? []);
    if (obj.kind === 'GatewayPlugin') status[key].routes = users.get(key) ?? 0;
  }
  return {
    snapshot: snapshotOf(compiled.table),
    status,
    diagnostics,
    gatewayApi: { status: gw.status, services: gw.services },
    ingress: ingressReports(ing.ingresses, found),
  };
}

/** The translation's reports, with compile's diagnostics of each Ingress (a conflict) added. */
function ingressReports(
  reports: ReadonlyMap<string, IngressReport>,
  found: ReadonlyMap<string, Diagnostic[]>,
): ReadonlyMap<string, IngressReport> {
  const out = new Map<string, IngressReport>();
  for (const [key, r] of reports) {
    const compiled = found.get(`Ingress/${key}`) ?? [];
    out.set(
      key,
      compiled.length
        ? {
            ...r,
            problems: [
              ...r.problems,
              ...compiled.map((d) => ({ field: d.field, reason: d.reason, message: d.message })),
            ],
          }
        : r,
    );
  }
  return out;
}

/** "GatewayPlugin/ns/name" → how many GatewayRoutes name it, at any scope (each route once). */
function routesUsing(resources: ResourceSet): Map<string, number> {
  const counts = new Map<string, number>();
  for (const route of resources.routes.values()) {
    const ns = refOf(route).namespace;
    // Optimization: a route names a few plugins, so a scan of the list so far finds repeats
    // without a Set per route (5,000 of them per build).
    const names = pluginRefsOf(route.spec).map((site) => site.name);
    names.forEach((name, i) => {
      if (names.indexOf(name) !== i) return;
      const key = refKey({ kind: 'GatewayPlugin', namespace: ns, name });
      counts.set(key, (counts.get(key) ?? 0) + 1);
    });
  }
  return counts;
}

const FINE = {
  Accepted: { reason: 'Accepted', message: 'The object is valid.' },
  ResolvedRefs: { reason: 'ResolvedRefs', message: 'All references resolved.' },
} as const;
const MAX_IN_MESSAGE = 3;

/** The conditions of one object from its own diagnostics (mine, in the order found). */
function statusOf(observedGeneration: number, mine: Diagnostic[]): ObjectStatus {
  const condition = (type: ConditionType): ComputedCondition => {
    const found = mine.filter((d) => d.condition === type);
    if (found.length === 0) return { type, status: 'True', observedGeneration, ...FINE[type] };
    const parts = found.slice(0, MAX_IN_MESSAGE).map((d) => `${d.field}: ${d.message}`);
    if (found.length > MAX_IN_MESSAGE) parts.push(`and ${found.length - MAX_IN_MESSAGE} more`);
    return { type, status: 'False', observedGeneration, reason: found[0].reason, message: parts.join('; ') };
  };
  return { observedGeneration, conditions: [condition('Accepted'), condition('ResolvedRefs')] };
}

/** Stable sort by object: whatever stage found a problem, an object's diagnostics sit together. */
function byObject(list: Diagnostic[]): Diagnostic[] {
  const keyed = list.map((d, i) => ({ d, i, key: refKey(d.object) }));
  keyed.sort((a, b) => compareText(a.key, b.key) || a.i - b.i);
  return keyed.map((k) => k.d);
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
