/**
 * A GatewayClass's parametersRef ConfigMap (controller/gateway-api/class-parameters.ts), and the
 * controllerName an installation serves (build's gatewayControllerName): which classes, Gateways
 * and route parents are its own.
 */
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { Resource } from '../../controller/api/index.ts';
import { build } from '../../controller/build.ts';
import {
  classParameters,
  gatewayParameters,
  gatewayParametersConfigMap,
  parametersConfigMap,
} from '../../controller/gateway-api/class-parameters.ts';
import type { Gateway, GatewayClass } from '../../controller/api/gateway-api.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';

const cls = (parametersRef?: GatewayClass['spec']['parametersRef']): GatewayClass => ({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'GatewayClass',
  metadata: { name: 'c', generation: 1 },
  spec: { controllerName: 'sluice.dev/gateway-controller', ...(parametersRef && { parametersRef }) },
});
const REF = { group: '', kind: 'ConfigMap', name: 'p', namespace: 'sluice' };
const withData = (data: Record<string, string>) =>
  resourceSetFrom([
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'p', namespace: 'sluice' }, data },
  ]);
const problemOf = (data: Record<string, string>) => {
  const r = classParameters(withData(data), cls(REF));
  return 'problem' in r ? r.problem : undefined;
};

describe('GatewayClass parameters (a ConfigMap)', () => {
  it('no parametersRef: no parameters, accepted', () => {
    expect(classParameters(withData({}), cls())).toEqual({ parameters: {} });
  });

  it('reads serviceType and the maps, YAML or JSON; an empty ConfigMap sets nothing', () => {
    expect(
      classParameters(
        withData({
          serviceType: ' LoadBalancer\n',
          serviceLabels: 'team: a\nexample.com/tier: "1"',
          serviceAnnotations: '{"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"}',
        }),
        cls(REF),
      ),
    ).toEqual({
      parameters: {
        serviceType: 'LoadBalancer',
        serviceLabels: { team: 'a', 'example.com/tier': '1' },
        serviceAnnotations: { 'service.beta.kubernetes.io/aws-load-balancer-scheme': 'internal' },
      },
    });
    expect(classParameters(withData({}), cls(REF))).toEqual({ parameters: {} });
    expect(classParameters(withData({ serviceLabels: '' }), cls(REF))).toEqual({
      parameters: { serviceLabels: {} },
    });
  });

  it('refuses what would make a Service the API server rejects, naming the ConfigMap, key and value', () => {
    expect(problemOf({ serviceType: 'External' })).toBe(
      'ConfigMap sluice/p key serviceType: "External" is not ClusterIP, LoadBalancer, NodePort',
    );
    expect(problemOf({ serviceLabels: 'team: "a b"' })).toBe(
      'ConfigMap sluice/p key serviceLabels: the value of team, "a b", is not a label value',
    );
    expect(problemOf({ serviceLabels: '"bad key!": x' })).toBe(
      'ConfigMap sluice/p key serviceLabels: "bad key!" is not a label key',
    );
    expect(problemOf({ serviceAnnotations: 'a: 1' })).toBe(
      'ConfigMap sluice/p key serviceAnnotations: the value of a must be a string (quote it)',
    );
    expect(problemOf({ serviceAnnotations: '[a, b]' })).toBe(
      'ConfigMap sluice/p key serviceAnnotations: must be a map of keys to strings',
    );
    expect(problemOf({ serviceLabels: 'a: [' })).toMatch(
      /^ConfigMap sluice\/p key serviceLabels: not YAML \(/,
    );
    expect(problemOf({ servicetype: 'NodePort' })).toBe(
      'ConfigMap sluice/p key servicetype is not a parameter Sluice reads (externalTrafficPolicy, serviceAnnotations, serviceLabels, serviceType are)',
    );
    expect(problemOf({ externalTrafficPolicy: 'Nearest' })).toBe(
      'ConfigMap sluice/p key externalTrafficPolicy: "Nearest" is not Cluster, Local',
    );
    expect(problemOf({ serviceType: 'ClusterIP', externalTrafficPolicy: 'Local' })).toBe(
      'ConfigMap sluice/p key externalTrafficPolicy: a ClusterIP Service has none (serviceType NodePort or LoadBalancer takes it)',
    );
    expect(classParameters(withData({ externalTrafficPolicy: 'Local' }), cls(REF))).toEqual({
      parameters: { externalTrafficPolicy: 'Local' },
    });
  });

  it('only a ConfigMap with a namespace is read; the watched ConfigMaps it names are those', () => {
    expect(parametersConfigMap(cls(REF))).toBe('sluice/p');
    expect(parametersConfigMap(cls({ ...REF, namespace: undefined }))).toBeUndefined();
    expect(parametersConfigMap(cls({ ...REF, group: 'example.com' }))).toBeUndefined();
    expect(parametersConfigMap(cls())).toBeUndefined();
  });
});

describe("a Gateway's own parameters (spec.infrastructure.parametersRef), over its class's", () => {
  const gw = (parametersRef?: { group: string; kind: string; name: string }): Gateway => ({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: 'g', namespace: 'shop', generation: 1 },
    spec: {
      gatewayClassName: 'c',
      listeners: [],
      ...(parametersRef && { infrastructure: { parametersRef } }),
    },
  });
  const OWN = { group: '', kind: 'ConfigMap', name: 'own' };
  const inShop = (data: Record<string, string>) =>
    resourceSetFrom([
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'own', namespace: 'shop' }, data },
    ]);
  const CLASS = {
    serviceType: 'NodePort' as const,
    externalTrafficPolicy: 'Local' as const,
    serviceLabels: { team: 'a', tier: 'edge' },
  };

  it("none of its own: the class's, unchanged", () => {
    expect(gatewayParameters(inShop({}), gw(), CLASS)).toEqual({ parameters: CLASS });
  });

  it("its keys win, maps merge key by key; unset keys are the class's", () => {
    expect(
      gatewayParameters(
        inShop({ serviceType: 'LoadBalancer', serviceLabels: 'tier: public', serviceAnnotations: 'a: b' }),
        gw(OWN),
        CLASS,
      ),
    ).toEqual({
      parameters: {
        serviceType: 'LoadBalancer',
        externalTrafficPolicy: 'Local',
        serviceLabels: { team: 'a', tier: 'public' },
        serviceAnnotations: { a: 'b' },
      },
    });
  });

  it("ClusterIP of its own drops the class's externalTrafficPolicy; its own with the class's ClusterIP is refused", () => {
    expect(gatewayParameters(inShop({ serviceType: 'ClusterIP' }), gw(OWN), CLASS)).toEqual({
      parameters: { serviceType: 'ClusterIP', serviceLabels: CLASS.serviceLabels },
    });
    expect(
      gatewayParameters(inShop({ externalTrafficPolicy: 'Local' }), gw(OWN), { serviceType: 'ClusterIP' }),
    ).toEqual({
      problem:
        "spec.infrastructure.parametersRef: ConfigMap shop/own key externalTrafficPolicy: a ClusterIP Service (the class's serviceType) has none",
    });
  });

  it("a local reference: the ConfigMap in the Gateway's namespace, or InvalidParameters naming why", () => {
    expect(gatewayParameters(inShop({}), gw({ ...OWN, name: 'nowhere' }), {})).toEqual({
      problem:
        'spec.infrastructure.parametersRef: ConfigMap shop/nowhere not found (it must be in a namespace the controller watches)',
    });
    expect(
      gatewayParameters(inShop({}), gw({ group: 'example.com', kind: 'Params', name: 'p' }), {}),
    ).toEqual({
      problem:
        'spec.infrastructure.parametersRef: example.com/Params p is not a kind of parameters Sluice reads (a ConfigMap is: group "", kind ConfigMap)',
    });
    expect(gatewayParameters(inShop({ serviceType: 'Ingress' }), gw(OWN), {})).toEqual({
      problem: 'ConfigMap shop/own key serviceType: "Ingress" is not ClusterIP, LoadBalancer, NodePort',
    });
    expect(gatewayParametersConfigMap(gw(OWN))).toBe('shop/own');
    expect(gatewayParametersConfigMap(gw({ ...OWN, kind: 'Secret' }))).toBeUndefined();
    expect(gatewayParametersConfigMap(gw())).toBeUndefined();
  });
});

describe('the controllerName an installation serves', () => {
  const objects = parseAllDocuments(`
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: a, generation: 1 }
spec: { controllerName: sluice.dev/gateway-controller }
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: b, generation: 1 }
spec: { controllerName: sluice.dev/gateway-controller-team-b }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw-a, namespace: infra, generation: 1, uid: u-a }
spec: { gatewayClassName: a, listeners: [{ name: http, port: 80, protocol: HTTP }] }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw-b, namespace: infra, generation: 1, uid: u-b }
spec: { gatewayClassName: b, listeners: [{ name: http, port: 80, protocol: HTTP }] }
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: web, namespace: infra, generation: 1 }
spec:
  parentRefs: [{ name: gw-a }, { name: gw-b }]
  rules: [{ backendRefs: [{ name: web, port: 8080 }] }]
`).map((d) => d.toJS() as Resource);
  const set = resourceSetFrom(objects, { withServices: true });

  it('each installation serves only its own classes, their Gateways, Services and route parents', () => {
    for (const [name, mine, theirs] of [
      [undefined, 'a', 'b'],
      ['sluice.dev/gateway-controller-team-b', 'b', 'a'],
    ] as const) {
      const { gatewayApi, snapshot } = build(set, { gatewayControllerName: name });
      expect([...gatewayApi.status.classes.keys()]).toEqual([mine]);
      expect([...gatewayApi.status.gateways.keys()]).toEqual([`infra/gw-${mine}`]);
      expect(gatewayApi.services.map((s) => s.name)).toEqual([`sluice-gateway-gw-${mine}`]);
      expect(snapshot.table.listeners?.map((l) => l.id)).toEqual([`listener/infra/gw-${mine}/http`]);
      const parents = gatewayApi.status.routes.get('infra/web')!.parents;
      expect(parents.map((p) => [p.parentRef.name, p.controllerName])).toEqual([
        [`gw-${mine}`, name ?? 'sluice.dev/gateway-controller'],
      ]);
      expect(JSON.stringify(gatewayApi)).not.toContain(`gw-${theirs}`);
    }
  });
});
