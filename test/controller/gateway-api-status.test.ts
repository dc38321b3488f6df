/** The pure parts of the Gateway API writes: status to write (or none), addresses, the Services. */
import { describe, expect, it } from 'vitest';
import type { Service } from '../../controller/api/service.ts';
import type {
  ComputedCondition,
  GatewayStatus,
  RouteStatus,
} from '../../controller/gateway-api/conditions.ts';
import type { GatewayService } from '../../controller/gateway-api/index.ts';
import {
  classTransitions,
  gatewayAddresses,
  gatewayTransitions,
  nextClassStatus,
  nextGatewayStatus,
  nextRouteParents,
  routeTransitions,
  wantedGateway,
} from '../../controller/status/gateway-api-status.ts';
import { eventType } from '../../controller/status/events.ts';
import { isGatewayService, newService, updatedService } from '../../controller/status/gateway-services.ts';

const T0 = new Date('2026-01-01T00:00:00.000Z');
const T1 = new Date('2026-01-01T00:01:00.000Z');
const cond = (type: string, ok: boolean, reason = type, gen = 1): ComputedCondition => ({
  type,
  status: ok ? 'True' : 'False',
  reason,
  message: `${type} ${ok}`,
  observedGeneration: gen,
});
const gateway = (listenerOk = true): GatewayStatus => ({
  observedGeneration: 1,
  conditions: [cond('Accepted', true)],
  listeners: [
    {
      name: 'http',
      supportedKinds: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }],
      attachedRoutes: 1,
      conditions: [
        cond('Accepted', listenerOk, listenerOk ? 'Accepted' : 'UnsupportedProtocol'),
        cond('ResolvedRefs', true),
        { ...cond('Conflicted', false, 'NoConflicts') },
      ],
    },
  ],
});
const programmed = (ok: boolean) =>
  ok
    ? cond('Programmed', true)
    : { ...cond('Programmed', false, 'Pending'), message: 'Running on 1 of 2 pods.' };

describe('gatewayAddresses', () => {
  const svc = (spec: Service['spec'], status?: Service['status']): Service => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'sluice-gateway-gw', namespace: 'infra' },
    spec,
    status,
  });
  it("the load balancer's ingress (ip or hostname), else the cluster IP, else the cluster DNS name", () => {
    expect(
      gatewayAddresses(
        svc(
          { clusterIP: '10.0.0.9' },
          { loadBalancer: { ingress: [{ ip: '203.0.113.4' }, { hostname: 'lb.example' }] } },
        ),
      ),
    ).toEqual([
      { type: 'IPAddress', value: '203.0.113.4' },
      { type: 'Hostname', value: 'lb.example' },
    ]);
    expect(gatewayAddresses(svc({ clusterIP: '10.0.0.9' }))).toEqual([
      { type: 'IPAddress', value: '10.0.0.9' },
    ]);
    expect(gatewayAddresses(svc({ clusterIP: 'None' }))).toEqual([
      { type: 'Hostname', value: 'sluice-gateway-gw.infra.svc.cluster.local' },
    ]);
    expect(gatewayAddresses(undefined)).toEqual([]);
  });
});

describe('wantedGateway', () => {
  it('listener Programmed: True when the Gateway is programmed and the listener served; Pending while the pods are not there; Invalid when not served', () => {
    const yes = wantedGateway(gateway(), programmed(true), []);
    expect(yes.conditions.map((c) => [c.type, c.status])).toEqual([
      ['Accepted', 'True'],
      ['Programmed', 'True'],
    ]);
    expect(yes.listeners[0].conditions.at(-1)).toMatchObject({ type: 'Programmed', status: 'True' });
    const pending = wantedGateway(gateway(), programmed(false), []);
    expect(pending.listeners[0].conditions.at(-1)).toMatchObject({
      status: 'False',
      reason: 'Pending',
      message: 'Running on 1 of 2 pods.',
    });
    const invalid = wantedGateway(gateway(false), programmed(true), []);
    expect(invalid.listeners[0].conditions.at(-1)).toMatchObject({ status: 'False', reason: 'Invalid' });
    const notAccepted = { ...gateway(), conditions: [cond('Accepted', false, 'InvalidParameters')] };
    expect(wantedGateway(notAccepted, programmed(false), []).listeners[0].conditions.at(-1)).toMatchObject({
      reason: 'Invalid',
      message: 'Not programmed: the Gateway is not accepted.',
    });
  });

  it('Gateway Programmed: False Invalid when the Gateway is accepted but none of its listeners is served', () => {
    const unresolved: GatewayStatus = {
      ...gateway(),
      conditions: [cond('Accepted', true, 'ListenersNotValid')],
      listeners: gateway().listeners.map((l) => ({
        ...l,
        conditions: [
          cond('Accepted', true),
          cond('ResolvedRefs', false, 'InvalidCertificateRef'),
          l.conditions[2],
        ],
      })),
    };
    const w = wantedGateway(unresolved, programmed(true), []);
    expect(w.conditions.find((c) => c.type === 'Programmed')).toMatchObject({
      status: 'False',
      reason: 'Invalid',
      message: 'Not programmed: none of the listeners can be served.',
    });
    expect(w.listeners[0].conditions.at(-1)).toMatchObject({
      type: 'Programmed',
      status: 'False',
      reason: 'Invalid',
    });
    // One listener served is enough for the Gateway's.
    const some = { ...unresolved, listeners: [...unresolved.listeners, ...gateway().listeners] };
    expect(wantedGateway(some, programmed(true), []).conditions.at(-1)).toMatchObject({ status: 'True' });
  });
});

describe('nextGatewayStatus', () => {
  const addresses = [{ type: 'IPAddress' as const, value: '10.0.0.9' }];
  it('writes the whole status once, then nothing while it stays; keeps lastTransitionTime while a status stays', () => {
    const w = wantedGateway(gateway(), programmed(false), addresses);
    const first = nextGatewayStatus(undefined, w, T0)!;
    expect(first.addresses).toEqual(addresses);
    expect(first.listeners[0]).toMatchObject({ name: 'http', attachedRoutes: 1 });
    expect(nextGatewayStatus(first, w, T1)).toBeNull();
    // Programmed turns True: its time moves, Accepted's stays.
    const second = nextGatewayStatus(first, wantedGateway(gateway(), programmed(true), addresses), T1)!;
    const at = (s: typeof first, type: string) =>
      s.conditions.find((c) => c.type === type)!.lastTransitionTime;
    expect(at(second, 'Accepted')).toBe(T0.toISOString());
    expect(at(second, 'Programmed')).toBe(T1.toISOString());
    expect(second.listeners[0].conditions.find((c) => c.type === 'Accepted')!.lastTransitionTime).toBe(
      T0.toISOString(),
    );
  });
  it('a new address or attached route count is a change', () => {
    const w = wantedGateway(gateway(), programmed(true), addresses);
    const shown = nextGatewayStatus(undefined, w, T0)!;
    expect(nextGatewayStatus(shown, { ...w, addresses: [] }, T1)).not.toBeNull();
    const more = { ...w, listeners: [{ ...w.listeners[0], attachedRoutes: 2 }] };
    expect(nextGatewayStatus(shown, more, T1)?.listeners[0].attachedRoutes).toBe(2);
  });
});

describe('nextClassStatus', () => {
  it("replaces the CRD's default Unknown conditions, then writes nothing while they stay", () => {
    const w = {
      observedGeneration: 1,
      conditions: [cond('Accepted', true), cond('SupportedVersion', true)],
      supportedFeatures: [{ name: 'Gateway' }, { name: 'HTTPRoute' }],
    };
    const defaults = {
      conditions: [
        {
          type: 'Accepted',
          status: 'Unknown' as const,
          reason: 'Pending',
          message: 'Waiting for controller',
          lastTransitionTime: '1970-01-01T00:00:00Z',
        },
      ],
    };
    const first = nextClassStatus(defaults, w, T0)!;
    expect(first.conditions.map((c) => [c.type, c.status, c.lastTransitionTime])).toEqual([
      ['Accepted', 'True', T0.toISOString()],
      ['SupportedVersion', 'True', T0.toISOString()],
    ]);
    expect(first.supportedFeatures).toEqual([{ name: 'Gateway' }, { name: 'HTTPRoute' }]);
    expect(nextClassStatus(first, w, T1)).toBeNull();
    // A new release supporting more: the features are written again, the conditions kept.
    const more = { ...w, supportedFeatures: [...w.supportedFeatures, { name: 'HTTPRouteCORS' }] };
    const second = nextClassStatus(first, more, T1)!;
    expect(second.supportedFeatures.map((f) => f.name)).toEqual(['Gateway', 'HTTPRoute', 'HTTPRouteCORS']);
    expect(second.conditions.map((c) => c.lastTransitionTime)).toEqual([T0.toISOString(), T0.toISOString()]);
  });
});

describe('nextRouteParents', () => {
  const parentRef = { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'gw', namespace: 'infra' };
  const mine: RouteStatus = {
    observedGeneration: 1,
    parents: [
      {
        parentRef,
        controllerName: 'sluice.dev/gateway-controller',
        conditions: [cond('Accepted', true), cond('ResolvedRefs', true)],
      },
    ],
  };
  const other = {
    parentRef: { name: 'their-gw' },
    controllerName: 'example.com/other',
    conditions: [{ ...cond('Accepted', true), lastTransitionTime: '2025-01-01T00:00:00Z' }],
  };
  it("replaces only Sluice's entries, keeps the other controllers' as they are, and is null once shown", () => {
    const first = nextRouteParents([other], mine, 'infra', T0)!;
    expect(first.map((p) => p.controllerName)).toEqual([
      'example.com/other',
      'sluice.dev/gateway-controller',
    ]);
    expect(first[0]).toBe(other);
    expect(nextRouteParents(first, mine, 'infra', T1)).toBeNull();
    // A parentRef written without defaults (as another writer might) is the same parent.
    const bare = [{ ...first[1], parentRef: { name: 'gw' } }];
    expect(nextRouteParents(bare, mine, 'infra', T1)).toBeNull();
  });
  it("drops Sluice's entries when the route has no parent of Sluice's any more", () => {
    const shown = nextRouteParents([other], mine, 'infra', T0)!;
    expect(nextRouteParents(shown, undefined, 'infra', T1)).toEqual([other]);
    expect(nextRouteParents([other], undefined, 'infra', T1)).toBeNull();
  });
  it("with another controllerName (a second installation): the first installation's entries are another controller's", () => {
    const teamB = 'sluice.dev/gateway-controller-team-b';
    const shown = nextRouteParents([other], mine, 'infra', T0)!;
    const b: RouteStatus = {
      ...mine,
      parents: [
        {
          ...mine.parents[0],
          controllerName: teamB,
          conditions: [cond('Accepted', false, 'NotAllowedByListeners'), cond('ResolvedRefs', true)],
        },
      ],
    };
    const both = nextRouteParents(shown, b, 'infra', T1, teamB)!;
    expect(both.slice(0, 2)).toEqual(shown);
    expect(both.map((p) => p.controllerName)).toEqual([
      'example.com/other',
      'sluice.dev/gateway-controller',
      teamB,
    ]);
    expect(nextRouteParents(both, b, 'infra', T1, teamB)).toBeNull();
    // Team B dropping its parent leaves the first installation's entry alone.
    expect(nextRouteParents(both, undefined, 'infra', T1, teamB)).toEqual(shown);
    expect(routeTransitions(shown, both, 'infra', teamB).length).toBeGreaterThan(0);
    expect(routeTransitions(shown, both, 'infra')).toEqual([]);
  });
});

describe('Events of Gateway API status writes', () => {
  it("a GatewayClass's: the CRD's Accepted Unknown turning True is Normal, InvalidParameters a Warning; nothing new, no Event", () => {
    const pending = {
      conditions: [
        {
          type: 'Accepted',
          status: 'Unknown' as const,
          reason: 'Pending',
          message: 'Waiting for controller',
          lastTransitionTime: T0.toISOString(),
        },
      ],
    };
    const status = (ok: boolean) => ({
      observedGeneration: 1,
      conditions: [
        ok ? cond('Accepted', true) : cond('Accepted', false, 'InvalidParameters'),
        cond('SupportedVersion', true),
      ],
      supportedFeatures: [],
    });
    const accepted = nextClassStatus(pending, status(true), T1)!;
    expect(classTransitions(pending, accepted).map((t) => [t.type, t.reason, eventType(t)])).toEqual([
      ['Accepted', 'Accepted', 'Normal'],
    ]);
    const invalid = nextClassStatus(accepted, status(false), T1)!;
    expect(classTransitions(accepted, invalid).map((t) => [t.type, t.reason, eventType(t)])).toEqual([
      ['Accepted', 'InvalidParameters', 'Warning'],
    ]);
    expect(classTransitions(invalid, invalid)).toEqual([]);
  });
  const addresses = [{ type: 'IPAddress' as const, value: '10.0.0.9' }];
  const parentRef = { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'gw', sectionName: 'http' };
  it("a Gateway's own and its listeners' changes, scoped by listener; Conflicted=False and Pending are no fault", () => {
    const first = nextGatewayStatus(undefined, wantedGateway(gateway(), programmed(false), addresses), T0)!;
    // Accepted True, listener Accepted/ResolvedRefs True and Conflicted False: nothing but Pending.
    expect(gatewayTransitions(undefined, first).map((t) => [t.type, t.reason, eventType(t)])).toEqual([
      ['Programmed', 'Pending', 'Normal'],
      ['Programmed', 'Pending', 'Normal'],
    ]);
    const ready = nextGatewayStatus(first, wantedGateway(gateway(), programmed(true), addresses), T1)!;
    expect(gatewayTransitions(first, ready).map((t) => [t.message, eventType(t)])).toEqual([
      ['Programmed true', 'Normal'],
      ['listener http: Programmed true', 'Normal'],
    ]);
    const broken = nextGatewayStatus(ready, wantedGateway(gateway(false), programmed(true), addresses), T1)!;
    expect(gatewayTransitions(ready, broken).map((t) => [t.type, t.reason, t.message, eventType(t)])).toEqual(
      [
        ['Programmed', 'Invalid', 'Not programmed: none of the listeners can be served.', 'Warning'],
        ['Accepted', 'UnsupportedProtocol', 'listener http: Accepted false', 'Warning'],
        ['Programmed', 'Invalid', 'listener http: Not programmed: Accepted is False.', 'Warning'],
      ],
    );
    expect(gatewayTransitions(broken, broken)).toEqual([]);
  });
  it('a listener conflict (Conflicted=True) is a Warning', () => {
    const st = gateway();
    st.listeners[0].conditions[2] = cond('Conflicted', true, 'HostnameConflict');
    const shown = nextGatewayStatus(undefined, wantedGateway(st, programmed(true), addresses), T0)!;
    const conflict = gatewayTransitions(undefined, shown).find((t) => t.type === 'Conflicted')!;
    expect([conflict.reason, conflict.message, eventType(conflict)]).toEqual([
      'HostnameConflict',
      'listener http: Conflicted true',
      'Warning',
    ]);
  });
  it("a route's changes per parent of Sluice's, scoped by parent; another controller's are not Sluice's to report", () => {
    const route = (ok: boolean): RouteStatus => ({
      observedGeneration: 1,
      parents: [
        {
          parentRef,
          controllerName: 'sluice.dev/gateway-controller',
          conditions: [
            cond('Accepted', true),
            cond('ResolvedRefs', ok, ok ? 'ResolvedRefs' : 'BackendNotFound'),
          ],
        },
      ],
    });
    const other = {
      parentRef: { name: 'their-gw' },
      controllerName: 'example.com/other',
      conditions: [{ ...cond('Accepted', false, 'NotAllowedByListeners'), lastTransitionTime: 'x' }],
    };
    const fine = nextRouteParents([other], route(true), 'apps', T0)!;
    expect(routeTransitions([other], fine, 'apps')).toEqual([]);
    const missing = nextRouteParents(fine, route(false), 'apps', T1)!;
    expect(routeTransitions(fine, missing, 'apps').map((t) => [t.reason, t.message, eventType(t)])).toEqual([
      ['BackendNotFound', 'parent apps/gw sectionName http: ResolvedRefs false', 'Warning'],
    ]);
  });
});

describe('Gateway Services', () => {
  const want: GatewayService = {
    namespace: 'infra',
    name: 'sluice-gateway-gw',
    gateway: { name: 'gw', uid: 'u-1' },
    ports: [
      { port: 80, targetPort: 20000 },
      { port: 443, targetPort: 20001 },
    ],
    labels: { 'gateway.networking.k8s.io/gateway-name': 'gw', team: 'a' },
    annotations: { 'lb.example/internal': 'true' },
  };
  const o = { selector: { app: 'sluice', component: 'dataplane' }, type: 'LoadBalancer' as const };

  it('is made with the listener ports, the selector, type, labels, annotations and a controller reference to the Gateway', () => {
    const s = newService(want, o);
    expect(s.spec).toEqual({
      type: 'LoadBalancer',
      selector: o.selector,
      ports: [
        { name: 'listener-80', port: 80, targetPort: 20000, protocol: 'TCP' },
        { name: 'listener-443', port: 443, targetPort: 20001, protocol: 'TCP' },
      ],
      externalTrafficPolicy: 'Cluster',
    });
    expect(s.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'Gateway',
        name: 'gw',
        uid: 'u-1',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(isGatewayService(s)).toBe(true);
  });

  it("is updated only when what the controller owns differs; the API server's fields stay", () => {
    const server = newService(want, o) as Service & { spec: { clusterIP: string; ipFamilies: string[] } };
    server.spec.clusterIP = '10.0.0.9';
    server.spec.ipFamilies = ['IPv4'];
    server.spec.ports![0].nodePort = 31000;
    server.metadata.resourceVersion = '7';
    expect(updatedService(server, want, o)).toBeNull();
    const moved = updatedService(server, { ...want, ports: [{ port: 80, targetPort: 20005 }] }, o)!;
    expect(moved.metadata.resourceVersion).toBe('7');
    expect(moved.spec).toMatchObject({ clusterIP: '10.0.0.9', ipFamilies: ['IPv4'] });
    expect(moved.spec!.ports).toEqual([
      { name: 'listener-80', port: 80, targetPort: 20005, protocol: 'TCP', nodePort: 31000 },
    ]);
    const relabelled = updatedService(
      server,
      { ...want, labels: { [Object.keys(want.labels)[0]]: 'gw' } },
      o,
    )!;
    expect(relabelled.metadata.labels).toEqual({ 'gateway.networking.k8s.io/gateway-name': 'gw' });
    const clusterIp = updatedService(server, want, { ...o, type: 'ClusterIP' })!;
    expect(clusterIp.spec!.type).toBe('ClusterIP');
    expect(clusterIp.spec!.ports![0].nodePort).toBeUndefined();
  });

  it("takes its class's type over the controller's default, and switching it is an update", () => {
    const nodePort = newService({ ...want, type: 'NodePort' }, o);
    expect(nodePort.spec!.type).toBe('NodePort');
    expect(updatedService(nodePort, { ...want, type: 'NodePort' }, o)).toBeNull();
    // The class's parameter is removed: back to the default (LoadBalancer here).
    expect(updatedService(nodePort, want, o)!.spec!.type).toBe('LoadBalancer');
    const server = newService(want, o);
    server.spec!.ports![0].nodePort = 31000;
    const clusterIp = updatedService(server, { ...want, type: 'ClusterIP' }, o)!;
    expect(clusterIp.spec!.type).toBe('ClusterIP');
    expect(clusterIp.spec!.ports![0].nodePort).toBeUndefined();
  });

  it("owns externalTrafficPolicy on NodePort and LoadBalancer (its class's, else Cluster); a ClusterIP Service has none", () => {
    const local = newService({ ...want, externalTrafficPolicy: 'Local' }, o);
    expect(local.spec!.externalTrafficPolicy).toBe('Local');
    const server = { ...local, spec: { ...local.spec!, healthCheckNodePort: 32000 } };
    expect(updatedService(server, { ...want, externalTrafficPolicy: 'Local' }, o)).toBeNull();
    // The parameter removed: back to Cluster, and the health-check node port goes with Local.
    const cluster = updatedService(server, want, o)!;
    expect(cluster.spec).toMatchObject({ externalTrafficPolicy: 'Cluster' });
    expect(cluster.spec!.healthCheckNodePort).toBeUndefined();
    const clusterIp = updatedService(server, { ...want, type: 'ClusterIP' }, o)!;
    expect(clusterIp.spec!.externalTrafficPolicy).toBeUndefined();
    expect(clusterIp.spec!.healthCheckNodePort).toBeUndefined();
    expect(newService(want, { ...o, type: 'ClusterIP' }).spec!.externalTrafficPolicy).toBeUndefined();
    // A ClusterIP Service's policy is none of the controller's business: no update for it.
    expect(
      updatedService(newService(want, { ...o, type: 'ClusterIP' }), want, { ...o, type: 'ClusterIP' }),
    ).toBeNull();
  });

  it('carries the controllerName that made it: another installation never takes it for its own', () => {
    const teamB = 'sluice.dev/gateway-controller-team-b';
    const a = newService(want, o);
    expect(a.metadata.annotations).toEqual({
      'lb.example/internal': 'true',
      'sluice.dev/gateway-controller-name': 'sluice.dev/gateway-controller',
    });
    expect(isGatewayService(a)).toBe(true);
    expect(isGatewayService(a, teamB)).toBe(false);
    const b = newService(want, { ...o, controllerName: teamB });
    expect(isGatewayService(b, teamB)).toBe(true);
    expect(isGatewayService(b)).toBe(false);
    // Made before the annotation existed: the default installation's.
    const old = newService(want, o);
    delete old.metadata.annotations!['sluice.dev/gateway-controller-name'];
    expect(isGatewayService(old)).toBe(true);
    expect(isGatewayService(old, teamB)).toBe(false);
    // A Gateway moved to team B's class: B takes its Service over (an update naming B).
    expect(updatedService(a, want, { ...o, controllerName: teamB })!.metadata.annotations).toMatchObject({
      'sluice.dev/gateway-controller-name': teamB,
    });
  });

  it("another controller's Service labelled with a Gateway's name is not one of ours", () => {
    const theirs = newService(want, o);
    theirs.metadata.name = 'gw-istio';
    expect(isGatewayService(theirs)).toBe(false);
    const unowned = newService(want, o);
    unowned.metadata.ownerReferences = [];
    expect(isGatewayService(unowned)).toBe(false);
  });
});
