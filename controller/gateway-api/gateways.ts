/**
 * GatewayClasses and Gateways → the listeners the data plane serves, with their status. Pure.
 *
 * A GatewayClass is this installation's when spec.controllerName is the one it serves
 * (sluice.dev/gateway-controller unless configured), and accepted when its parametersRef, if
 * any, resolves (class-parameters.ts: else Accepted False InvalidParameters, and its Gateways are
 * not served). A Gateway of an accepted class gets, per listener:
 *   - Accepted: False UnsupportedProtocol for anything but HTTP and HTTPS (TLS termination);
 *     False PortUnavailable when the port range is full;
 *   - ResolvedRefs: False InvalidCertificateRef (a certificateRef that is not a Secret, missing,
 *     not kubernetes.io/tls, or whose pair does not parse), RefNotPermitted (another namespace
 *     without a ReferenceGrant), InvalidRouteKinds (allowedRoutes.kinds naming a kind Sluice
 *     cannot attach: supportedKinds lists only the others);
 *   - Conflicted: True ProtocolConflict when listeners of one port want different protocols,
 *     HostnameConflict when two have the same port and hostname;
 *   - for an HTTPS listener with client certificate validation (spec.tls.frontend,
 *     frontend-tls.ts): ResolvedRefs False InvalidCACertificateRef, InvalidCACertificateKind or
 *     RefNotPermitted, and Accepted False NoValidCACertificate when no CA ref resolves;
 * and only a listener with none of these is served (in the table). The Gateway is Accepted
 * unless its own infrastructure parameters do not resolve (InvalidParameters: then none of its
 * listeners is served, and its Service is left as it is) or none
 * of its listeners is Accepted (ListenersNotValid); Accepted with reason ListenersNotValid when
 * some of them cannot be served (and not Programmed when none can: gateway-api-status.ts).
 */
import type { Certificate, Listener } from '../../dataplane/config/route-table.ts';
import {
  GATEWAY_API_GROUP,
  GATEWAY_CONTROLLER_NAME,
  type Gateway,
  type GatewayClass,
  type GatewayListener,
  type LabelSelector,
} from '../api/gateway-api.ts';
import type { ResourceSet } from '../source/resource-set.ts';
import { keyOf } from '../source/resource-set.ts';
import { dnsNames, tlsPair } from '../validate/tls-refs.ts';
import { condition, type GatewayClassStatus, type GatewayStatus, type ListenerStatus } from './conditions.ts';
import { type ClassParameters, classParameters, gatewayParameters } from './class-parameters.ts';
import { SUPPORTED_FEATURES } from './features.ts';
import { resolveFrontendValidation } from './frontend-tls.ts';
import { allocatePorts, type PortRange } from './ports.ts';
import { referencePermitted } from './reference-grants.ts';

/** Route kinds a listener of each protocol can take. */
const ROUTE_KINDS: Record<string, readonly string[]> = {
  HTTP: ['HTTPRoute', 'GRPCRoute'],
  HTTPS: ['HTTPRoute', 'GRPCRoute'],
};

export interface ModelListener {
  /** listener/<ns>/<gateway>/<listener name> */
  id: string;
  gateway: Gateway;
  spec: GatewayListener;
  /** Lower-case, or undefined for any host. */
  hostname: string | undefined;
  /** The route kinds it takes (supportedKinds). */
  kinds: readonly string[];
  /** Whether it is served: accepted, refs resolved, no conflict. */
  served: boolean;
  /** The table entry, when served. */
  entry?: Listener;
}

export interface TranslatedGateways {
  /** The controllerName whose classes these are (routes' status.parents[].controllerName). */
  controllerName: string;
  classes: Map<string, GatewayClassStatus>;
  /** By Gateway "namespace/name", in key order: Gateways of Sluice's accepted classes only. */
  gateways: Map<
    string,
    {
      gateway: Gateway;
      status: GatewayStatus;
      listeners: ModelListener[];
      /** Its Service's (its class's merged with its own); null when its own do not resolve. */
      parameters: ClassParameters | null;
    }
  >;
  /**
   * Gateways of our classes that are not accepted (their parameters do not resolve): not
   * served, but their Services are kept as they are (a typo in a ConfigMap must not cost a
   * load balancer its address).
   */
  held: Gateway[];
  /** Listener port → data-plane port, by Gateway key. */
  ports: Map<string, Map<number, number>>;
  /** Of served HTTPS listeners, by id (gateway-certificate/<ns>/<secret>). */
  certificates: Certificate[];
}

export function translateGateways(
  set: ResourceSet,
  o: { ports?: PortRange; controllerName?: string } = {},
): TranslatedGateways {
  const controllerName = o.controllerName ?? GATEWAY_CONTROLLER_NAME;
  const classes = new Map<string, GatewayClassStatus>();
  /** Accepted classes' parameters, by class name. */
  const accepted = new Map<string, ClassParameters>();
  for (const [name, gc] of set.gatewayClasses) {
    // Another installation's classes (or another product's) are not looked at, nor written.
    if (gc.spec.controllerName !== controllerName) continue;
    const params = classParameters(set, gc);
    classes.set(name, classStatus(gc, params));
    if ('parameters' in params) accepted.set(name, params.parameters);
  }
  const ours = [...set.gateways].filter(([, g]) => accepted.has(g.spec.gatewayClassName));
  const held = [...set.gateways.values()].filter(
    (g) => classes.has(g.spec.gatewayClassName) && !accepted.has(g.spec.gatewayClassName),
  );
  const ports = allocatePorts(
    ours.map(([key, g]) => ({
      key,
      createdMs: createdMs(g),
      ports: [...new Set(g.spec.listeners.filter((l) => ROUTE_KINDS[l.protocol]).map((l) => l.port))],
      service: set.services?.get(keyOf(g.metadata.namespace!, gatewayServiceName(g.metadata.name))),
    })),
    o.ports,
  );
  const gateways: TranslatedGateways['gateways'] = new Map();
  const certificates = new Map<string, Certificate>();
  for (const [key, g] of ours) {
    const gen = g.metadata.generation ?? 0;
    const listeners = g.spec.listeners.map((l) =>
      translateListener(set, g, l, ports.get(key)!, certificates),
    );
    const statuses = listeners.map((l) => l.status);
    const model = listeners.map((l) => l.model);
    const own = gatewayParameters(set, g, accepted.get(g.spec.gatewayClassName)!);
    const invalidParameters = 'problem' in own ? own.problem : undefined;
    // Accepted when a listener is (upstream's reading): one whose references do not resolve is
    // still accepted, and counts its routes, though it is not served.
    const anyAccepted = statuses.some((l) =>
      l.conditions.some((c) => c.type === 'Accepted' && c.status === 'True'),
    );
    const unserved = model.filter((l) => !l.served).map((l) => l.spec.name);
    const acceptedCondition =
      invalidParameters !== undefined
        ? condition('Accepted', false, 'InvalidParameters', invalidParameters, gen)
        : !anyAccepted
          ? condition('Accepted', false, 'ListenersNotValid', 'None of the listeners is accepted.', gen)
          : unserved.length > 0
            ? // The spec's reason when some listeners are invalid, with the Gateway accepted for the rest.
              condition(
                'Accepted',
                true,
                'ListenersNotValid',
                `The Gateway is accepted; listeners ${unserved.join(', ')} cannot be served (see their conditions).`,
                gen,
              )
            : condition('Accepted', true, 'Accepted', 'The Gateway is accepted.', gen);
    if ('problem' in own) for (const l of model) l.served = false;
    gateways.set(key, {
      gateway: g,
      status: { observedGeneration: gen, conditions: [acceptedCondition], listeners: statuses },
      listeners: model,
      // Not accepted for its parameters: its Service is held as it is, as a class's Gateways' are.
      parameters: 'parameters' in own ? own.parameters : null,
    });
  }
  for (const { listeners } of gateways.values()) for (const l of listeners) if (!l.served) delete l.entry;
  const used = new Set(
    [...gateways.values()].flatMap((g) => g.listeners.flatMap((l) => l.entry?.certificates ?? [])),
  );
  return {
    controllerName,
    classes,
    gateways,
    held,
    ports,
    certificates: [...certificates.values()]
      .filter((c) => used.has(c.id))
      .sort((a, b) => compare(a.id, b.id)),
  };
}

/** The Service the controller makes for a Gateway, in its namespace. */
export function gatewayServiceName(gateway: string): string {
  const name = `sluice-gateway-${gateway}`;
  return name.length <= 63 ? name : name.slice(0, 63).replace(/-+$/, '');
}

function classStatus(gc: GatewayClass, params: ReturnType<typeof classParameters>): GatewayClassStatus {
  const gen = gc.metadata.generation ?? 0;
  const problem = 'problem' in params ? params.problem : undefined;
  return {
    observedGeneration: gen,
    conditions: [
      problem !== undefined
        ? condition('Accepted', false, 'InvalidParameters', problem, gen)
        : condition('Accepted', true, 'Accepted', 'Sluice serves Gateways of this class.', gen),
      condition('SupportedVersion', true, 'SupportedVersion', 'Gateway API v1 (standard channel).', gen),
    ],
    supportedFeatures: problem !== undefined ? [] : SUPPORTED_FEATURES.map((name) => ({ name })),
  };
}

function translateListener(
  set: ResourceSet,
  g: Gateway,
  l: GatewayListener,
  ports: ReadonlyMap<number, number>,
  certificates: Map<string, Certificate>,
): { status: ListenerStatus; model: ModelListener } {
  const gen = g.metadata.generation ?? 0;
  const ns = g.metadata.namespace!;
  const id = `listener/${ns}/${g.metadata.name}/${l.name}`;
  const hostname = l.hostname?.toLowerCase();
  const possible = ROUTE_KINDS[l.protocol];
  const problems: { type: string; reason: string; message: string }[] = [];
  // Route kinds: those asked for that this protocol can take; any other is InvalidRouteKinds.
  let kinds: string[] = [...(possible ?? [])];
  if (l.allowedRoutes?.kinds !== undefined) {
    const asked = l.allowedRoutes.kinds;
    kinds = asked
      .filter((k) => (k.group ?? GATEWAY_API_GROUP) === GATEWAY_API_GROUP && possible?.includes(k.kind))
      .map((k) => k.kind);
    const bad = asked.filter(
      (k) => !kinds.includes(k.kind) || (k.group ?? GATEWAY_API_GROUP) !== GATEWAY_API_GROUP,
    );
    if (bad.length)
      problems.push({
        type: 'ResolvedRefs',
        reason: 'InvalidRouteKinds',
        message: `allowedRoutes.kinds: ${bad.map((k) => `${k.group ?? GATEWAY_API_GROUP}/${k.kind}`).join(', ')} cannot attach to a ${l.protocol} listener`,
      });
  }
  if (possible === undefined)
    problems.push({
      type: 'Accepted',
      reason: 'UnsupportedProtocol',
      message: `protocol ${l.protocol} is not served (HTTP and HTTPS are)`,
    });
  else if (l.protocol === 'HTTPS' && l.tls?.mode === 'Passthrough')
    problems.push({
      type: 'Accepted',
      reason: 'UnsupportedProtocol',
      message: 'HTTPS with tls.mode Passthrough is not served',
    });
  const targetPort = ports.get(l.port);
  if (possible !== undefined && targetPort === undefined)
    problems.push({
      type: 'Accepted',
      reason: 'PortUnavailable',
      message: 'no data-plane port is left in the range',
    });
  const conflict = conflictOf(g, l);
  if (conflict) problems.push({ type: 'Conflicted', ...conflict });
  const certIds: string[] = [];
  if (l.protocol === 'HTTPS' && l.tls?.mode !== 'Passthrough') {
    const refs = l.tls?.certificateRefs ?? [];
    if (refs.length === 0)
      problems.push({
        type: 'ResolvedRefs',
        reason: 'InvalidCertificateRef',
        message: 'tls.certificateRefs is empty',
      });
    refs.forEach((ref, i) => {
      const at = `tls.certificateRefs[${i}]`;
      const refNs = ref.namespace ?? ns;
      const name = `${refNs}/${ref.name}`;
      if ((ref.group ?? '') !== '' || (ref.kind ?? 'Secret') !== 'Secret') {
        problems.push({
          type: 'ResolvedRefs',
          reason: 'InvalidCertificateRef',
          message: `${at}: ${ref.group ?? ''}/${ref.kind} is not a Secret`,
        });
        return;
      }
      const permitted = referencePermitted(
        set.referenceGrants,
        { group: GATEWAY_API_GROUP, kind: 'Gateway', namespace: ns },
        { group: '', kind: 'Secret', namespace: refNs, name: ref.name },
      );
      if (!permitted) {
        problems.push({
          type: 'ResolvedRefs',
          reason: 'RefNotPermitted',
          message: `${at}: Secret ${name} is in another namespace and no ReferenceGrant there allows it`,
        });
        return;
      }
      const secret = set.secrets.get(keyOf(refNs, ref.name));
      const pair = secret === undefined ? `Secret ${name} not found` : tlsPair(secret, name);
      if (typeof pair === 'string') {
        problems.push({ type: 'ResolvedRefs', reason: 'InvalidCertificateRef', message: `${at}: ${pair}` });
        return;
      }
      const certId = `gateway-certificate/${refNs}/${ref.name}`;
      const hosts = dnsNames(pair.leaf);
      if (!certificates.has(certId))
        certificates.set(certId, {
          cert: pair.cert,
          hosts: hosts.length ? [...new Set(hosts)].sort(compare) : [hostname ?? '*'],
          id: certId,
          key: pair.key,
        });
      if (!certIds.includes(certId)) certIds.push(certId);
    });
  }
  const frontend = resolveFrontendValidation(set, g, l);
  problems.push(...frontend.problems);
  const first = (type: string) => problems.find((p) => p.type === type);
  const accepted = first('Accepted');
  const refs = first('ResolvedRefs');
  const conflicted = first('Conflicted');
  const served = !accepted && !refs && !conflicted;
  const status: ListenerStatus = {
    name: l.name,
    supportedKinds: kinds.map((kind) => ({ group: GATEWAY_API_GROUP, kind })),
    attachedRoutes: 0,
    conditions: [
      accepted
        ? condition('Accepted', false, accepted.reason, accepted.message, gen)
        : condition('Accepted', true, 'Accepted', 'The listener is accepted.', gen),
      refs
        ? condition('ResolvedRefs', false, refs.reason, messages(problems, 'ResolvedRefs'), gen)
        : condition('ResolvedRefs', true, 'ResolvedRefs', 'All references resolved.', gen),
      conflicted
        ? { ...condition('Conflicted', true, conflicted.reason, conflicted.message, gen) }
        : condition('Conflicted', false, 'NoConflicts', 'No conflicts.', gen),
    ],
  };
  const entry: Listener | undefined =
    targetPort === undefined || possible === undefined
      ? undefined
      : {
          ...(certIds.length && { certificates: certIds }),
          ...(hostname !== undefined && { hostname }),
          id,
          port: targetPort,
          protocol: l.protocol as 'HTTP' | 'HTTPS',
          ...(frontend.validation && { clientValidation: frontend.validation }),
        };
  return { status, model: { id, gateway: g, spec: l, hostname, kinds, served, ...(entry && { entry }) } };
}

/** Listeners of one Gateway port must agree on the protocol and differ in hostname. */
function conflictOf(g: Gateway, l: GatewayListener): { reason: string; message: string } | undefined {
  const same = g.spec.listeners.filter((o) => o !== l && o.port === l.port);
  const other = same.find((o) => o.protocol !== l.protocol);
  if (other)
    return {
      reason: 'ProtocolConflict',
      message: `listener ${other.name} uses port ${l.port} with protocol ${other.protocol}`,
    };
  const twin = same.find((o) => (o.hostname ?? '').toLowerCase() === (l.hostname ?? '').toLowerCase());
  if (twin)
    return {
      reason: 'HostnameConflict',
      message: `listener ${twin.name} has the same port and hostname`,
    };
  return undefined;
}

/** Whether a listener admits routes from a namespace (allowedRoutes.namespaces; default Same). */
export function admitsNamespace(
  l: ModelListener,
  namespace: string,
  labelsOf: (ns: string) => Record<string, string> | undefined,
): boolean {
  const from = l.spec.allowedRoutes?.namespaces?.from ?? 'Same';
  if (from === 'All') return true;
  if (from === 'Same') return namespace === l.gateway.metadata.namespace;
  if (from === 'Selector') {
    const labels = labelsOf(namespace);
    return labels !== undefined && selects(l.spec.allowedRoutes?.namespaces?.selector, labels);
  }
  return false;
}

function selects(selector: LabelSelector | undefined, labels: Record<string, string>): boolean {
  if (selector === undefined) return false;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const inValues = has && (e.values ?? []).includes(labels[e.key]);
    if (e.operator === 'In' && !inValues) return false;
    if (e.operator === 'NotIn' && inValues) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

function messages(problems: { type: string; message: string }[], type: string): string {
  return problems
    .filter((p) => p.type === type)
    .map((p) => p.message)
    .join('; ');
}

function createdMs(g: Gateway): number | undefined {
  const t = g.metadata.creationTimestamp ? Date.parse(g.metadata.creationTimestamp) : Number.NaN;
  return Number.isNaN(t) ? undefined : t;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
