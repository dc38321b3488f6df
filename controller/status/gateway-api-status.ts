/**
 * The status the leader writes on Gateway API objects, from what build computed
 * (controller/gateway-api/conditions.ts) and what only the runner knows: Programmed (which
 * snapshot each data-plane pod runs) and a Gateway's addresses (its Service). Pure: each
 * `next…` function gives the status to write, or null when the object already shows it, with
 * lastTransitionTime kept while a condition's status stays (status-writer.ts).
 */
import type { Condition } from '../api/common.ts';
import { GATEWAY_API_GROUP, GATEWAY_CONTROLLER_NAME, type ParentReference } from '../api/gateway-api.ts';
import type { Service } from '../api/service.ts';
import type {
  ComputedCondition,
  GatewayClassStatus,
  GatewayStatus,
  RouteStatus,
} from '../gateway-api/conditions.ts';
import { type Transition, transitions } from './events.ts';
import { sameConditions, withTransitionTimes } from './status-writer.ts';

export interface GatewayAddress {
  type: 'IPAddress' | 'Hostname';
  value: string;
}

/**
 * A Gateway's addresses, from its Service: the load balancer's ingress, else the cluster IP,
 * else (a Service without one: an API server that allocates none) its cluster DNS name. None
 * before the Service exists.
 */
export function gatewayAddresses(service: Service | undefined): GatewayAddress[] {
  if (service === undefined) return [];
  const ingress = (service.status?.loadBalancer?.ingress ?? []).flatMap((i): GatewayAddress[] =>
    i.ip ? [{ type: 'IPAddress', value: i.ip }] : i.hostname ? [{ type: 'Hostname', value: i.hostname }] : [],
  );
  if (ingress.length > 0) return ingress;
  const ip = service.spec?.clusterIP;
  if (ip && ip !== 'None') return [{ type: 'IPAddress', value: ip }];
  return [
    {
      type: 'Hostname',
      value: `${service.metadata.name}.${service.metadata.namespace}.svc.cluster.local`,
    },
  ];
}

export interface ListenerStatusOut {
  name: string;
  supportedKinds: { group: string; kind: string }[];
  attachedRoutes: number;
  conditions: Condition[];
}

export interface GatewayStatusOut {
  conditions: Condition[];
  listeners: ListenerStatusOut[];
  addresses: GatewayAddress[];
}

/** What a Gateway's status holds when written (lastTransitionTime aside). */
export interface WantedGateway {
  conditions: ComputedCondition[];
  listeners: (Omit<ListenerStatusOut, 'conditions'> & { conditions: ComputedCondition[] })[];
  addresses: GatewayAddress[];
}

/**
 * A Gateway's status: build's Accepted and listener conditions, the Gateway's Programmed (from
 * the pods: conditions.ts programmed()), and each listener's Programmed: True when the Gateway
 * is programmed and the listener served (Accepted, ResolvedRefs, not Conflicted), False Invalid
 * when it is not served (or the Gateway not accepted), else False Pending. The Gateway's
 * Programmed is False Invalid when none of its listeners is served.
 */
export function wantedGateway(
  st: GatewayStatus,
  programmed: ComputedCondition,
  addresses: GatewayAddress[],
): WantedGateway {
  const gen = st.observedGeneration;
  const accepted = st.conditions.find((c) => c.type === 'Accepted')?.status === 'True';
  const badOf = (l: GatewayStatus['listeners'][number]) =>
    l.conditions.find((c) => (c.type === 'Conflicted' ? c.status !== 'False' : c.status !== 'True'));
  // An accepted Gateway none of whose listeners is served runs nothing: not programmed.
  const noneServed = st.listeners.every((l) => badOf(l) !== undefined);
  const gatewayProgrammed: ComputedCondition =
    accepted && noneServed && programmed.status === 'True'
      ? {
          type: 'Programmed',
          status: 'False',
          reason: 'Invalid',
          message: 'Not programmed: none of the listeners can be served.',
          observedGeneration: gen,
        }
      : programmed;
  return {
    conditions: [...st.conditions, gatewayProgrammed],
    listeners: st.listeners.map((l) => {
      const bad = badOf(l);
      const listenerProgrammed: ComputedCondition =
        bad !== undefined || !accepted
          ? {
              type: 'Programmed',
              status: 'False',
              reason: 'Invalid',
              message: bad
                ? `Not programmed: ${bad.type} is ${bad.status}.`
                : 'Not programmed: the Gateway is not accepted.',
              observedGeneration: gen,
            }
          : programmed.status === 'True'
            ? {
                type: 'Programmed',
                status: 'True',
                reason: 'Programmed',
                message: programmed.message,
                observedGeneration: gen,
              }
            : {
                type: 'Programmed',
                status: 'False',
                reason: 'Pending',
                message: programmed.message,
                observedGeneration: gen,
              };
      return { ...l, conditions: [...l.conditions, listenerProgrammed] };
    }),
    addresses,
  };
}

interface GatewayStatusIn {
  conditions?: Condition[];
  listeners?: ListenerStatusOut[];
  addresses?: GatewayAddress[];
}

/** The Gateway status to write (a merge patch of the whole of it), or null when it is shown already. */
export function nextGatewayStatus(
  current: GatewayStatusIn | undefined,
  w: WantedGateway,
  now: Date,
): GatewayStatusOut | null {
  const old = current ?? {};
  const conditions = withTransitionTimes(old.conditions ?? [], w.conditions, now);
  const listeners = w.listeners.map((l) => ({
    ...l,
    conditions: withTransitionTimes(
      old.listeners?.find((o) => o.name === l.name)?.conditions ?? [],
      l.conditions,
      now,
    ),
  }));
  const oldListeners = old.listeners ?? [];
  const unchanged =
    sameConditions(old.conditions ?? [], conditions) &&
    oldListeners.length === listeners.length &&
    listeners.every((l, i) => {
      const o = oldListeners[i];
      return (
        o.name === l.name &&
        o.attachedRoutes === l.attachedRoutes &&
        sameJson(o.supportedKinds, l.supportedKinds) &&
        sameConditions(o.conditions ?? [], l.conditions)
      );
    }) &&
    sameJson(old.addresses ?? [], w.addresses);
  return unchanged ? null : { conditions, listeners, addresses: w.addresses };
}

/** A GatewayClass's conditions and supported features to write, or null when shown already. */
export function nextClassStatus(
  current: { conditions?: Condition[]; supportedFeatures?: { name: string }[] } | undefined,
  w: GatewayClassStatus,
  now: Date,
): { conditions: Condition[]; supportedFeatures: { name: string }[] } | null {
  const old = current?.conditions ?? [];
  const conditions = withTransitionTimes(old, w.conditions, now);
  const unchanged =
    sameConditions(old, conditions) && sameJson(current?.supportedFeatures ?? [], w.supportedFeatures);
  return unchanged ? null : { conditions, supportedFeatures: w.supportedFeatures };
}

export interface RouteParentStatusOut {
  parentRef: ParentReference;
  controllerName: string;
  conditions: Condition[];
}

/**
 * An HTTPRoute's status.parents to write: the entries of other controllers as they are (another
 * Sluice installation's, of another controllerName, included), then this one's as wanted (none
 * when `w` is undefined: the route has no parent of ours any more); null when ours are as
 * wanted already.
 */
export function nextRouteParents(
  current: readonly RouteParentStatusOut[] | undefined,
  w: RouteStatus | undefined,
  routeNamespace: string,
  now: Date,
  controllerName: string = GATEWAY_CONTROLLER_NAME,
): RouteParentStatusOut[] | null {
  const all = current ?? [];
  const mine = all.filter((p) => p.controllerName === controllerName);
  const others = all.filter((p) => p.controllerName !== controllerName);
  const wanted = (w?.parents ?? []).map((p) => ({
    parentRef: p.parentRef,
    controllerName: p.controllerName,
    conditions: withTransitionTimes(
      mine.find((m) => sameParent(m.parentRef, p.parentRef, routeNamespace))?.conditions ?? [],
      p.conditions,
      now,
    ),
  }));
  const unchanged =
    mine.length === wanted.length &&
    wanted.every(
      (p, i) =>
        sameParent(mine[i].parentRef, p.parentRef, routeNamespace) &&
        sameConditions(mine[i].conditions ?? [], p.conditions),
    );
  return unchanged ? null : [...others, ...wanted];
}

/**
 * The condition changes a GatewayClass status write makes (for Events): the CRD's default
 * Accepted Unknown turning True is a Normal Accepted, turning False (InvalidParameters) a Warning.
 */
export function classTransitions(
  before: { conditions?: Condition[] } | undefined,
  after: { conditions: Condition[] },
): Transition[] {
  return transitions(before?.conditions, after.conditions);
}

/**
 * The condition changes a Gateway status write makes (for Events): the Gateway's own, then each
 * listener's, scoped "listener NAME" (a listener is matched by name).
 */
export function gatewayTransitions(
  before: GatewayStatusIn | undefined,
  after: GatewayStatusOut,
): Transition[] {
  return [
    ...transitions(before?.conditions, after.conditions),
    ...after.listeners.flatMap((l) =>
      transitions(
        before?.listeners?.find((o) => o.name === l.name)?.conditions ?? [],
        l.conditions,
        `listener ${l.name}`,
      ),
    ),
  ];
}

/**
 * The condition changes a route status write makes to Sluice's parents (for Events), each scoped
 * "parent NAMESPACE/NAME" (with its sectionName and port when the ref names them).
 */
export function routeTransitions(
  before: readonly RouteParentStatusOut[] | undefined,
  after: readonly RouteParentStatusOut[],
  routeNamespace: string,
  controllerName: string = GATEWAY_CONTROLLER_NAME,
): Transition[] {
  return after
    .filter((p) => p.controllerName === controllerName)
    .flatMap((p) => {
      const prev = before?.find(
        (b) => b.controllerName === controllerName && sameParent(b.parentRef, p.parentRef, routeNamespace),
      );
      const ref = p.parentRef;
      const scope = [
        `parent ${ref.namespace ?? routeNamespace}/${ref.name}`,
        ...(ref.sectionName ? [`sectionName ${ref.sectionName}`] : []),
        ...(ref.port !== undefined ? [`port ${ref.port}`] : []),
      ].join(' ');
      return transitions(prev?.conditions ?? [], p.conditions, scope);
    });
}

function sameParent(a: ParentReference, b: ParentReference, ns: string): boolean {
  return (
    (a.group ?? GATEWAY_API_GROUP) === (b.group ?? GATEWAY_API_GROUP) &&
    (a.kind ?? 'Gateway') === (b.kind ?? 'Gateway') &&
    (a.namespace ?? ns) === (b.namespace ?? ns) &&
    a.name === b.name &&
    a.sectionName === b.sectionName &&
    a.port === b.port
  );
}

/** Equal as JSON whatever the order of keys (the API server sends them sorted). */
function sameJson(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}
