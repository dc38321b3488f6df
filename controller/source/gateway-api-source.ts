/**
 * The Gateway API inputs, watched from the moment their CRDs are installed: one informer per CRD
 * (by name: a watch of one object each, not of every CRD in the cluster, which can be hundreds of
 * large objects), and once all four are Established, informers for GatewayClasses (cluster-wide)
 * and for Gateways, HTTPRoutes, GRPCRoutes, ReferenceGrants and ConfigMaps (client CA bundles,
 * and the parameters of this installation's GatewayClasses) in the watched namespaces. A cluster without the CRDs costs four idle watches; installing them
 * later starts serving without a restart.
 */
import type { ConfigMap } from '../api/index.ts';
import {
  GATEWAY_CONTROLLER_NAME,
  type Gateway,
  type GatewayClass,
  type GRPCRoute,
  type HTTPRoute,
  type Namespace,
  type ReferenceGrant,
} from '../api/gateway-api.ts';
import type { Resource } from '../api/index.ts';
import { collectionPath, type DeclaredResource } from './api-access.ts';
import { type ChangeType, Informer, type InformerOptions, type KubeObject } from './informers.ts';
import type { Kube } from './kube.ts';
import { gatewayParametersConfigMap, parametersConfigMap } from '../gateway-api/class-parameters.ts';
import { frontendCaRefs } from '../gateway-api/frontend-tls.ts';
import { gatewayApiReferences, isReferenced, type References } from './relevance.ts';
import { Watched, type WatchNamespaces } from './watched.ts';

const KINDS = ['gatewayclasses', 'gateways', 'httproutes', 'grpcroutes', 'referencegrants'] as const;

interface Crd extends KubeObject {
  status?: { conditions?: { type: string; status: string }[] };
}

type Kinds = {
  classes: Watched<GatewayClass & KubeObject>;
  gateways: Watched<Gateway & KubeObject>;
  routes: Watched<HTTPRoute & KubeObject>;
  grpcRoutes: Watched<GRPCRoute & KubeObject>;
  grants: Watched<ReferenceGrant & KubeObject>;
  namespaces: Watched<Namespace & KubeObject>;
  configMaps: Watched<ConfigMap & KubeObject>;
};

export class GatewayApiSource {
  readonly #crds: Informer<Crd>[];
  readonly #make: () => Kinds;
  readonly #controllerName: string;
  #kinds: Kinds | null = null;
  #listed = false;
  #stopped = false;
  /** Resolves once the CRDs are listed (whether or not they exist). */
  readonly synced: Promise<void>;

  constructor(
    kube: Kube,
    namespaces: WatchNamespaces,
    /** A Gateway API object changed in a way that can change the snapshot (or the kinds were first listed). */
    onChange: () => void,
    informerOptions: (resource: string) => InformerOptions,
    /** The GatewayClass controllerName served: the parametersRef ConfigMaps of its classes are read. */
    controllerName: string = GATEWAY_CONTROLLER_NAME,
  ) {
    this.#controllerName = controllerName;
    const changed = (t: ChangeType, obj: KubeObject, old?: KubeObject) => {
      // Status writes (ours and other controllers') leave generation and labels alone.
      if (t !== 'modified' || old?.metadata.generation !== obj.metadata.generation) onChange();
      else if (JSON.stringify(old?.metadata.labels) !== JSON.stringify(obj.metadata.labels)) onChange();
    };
    const watched = <T extends KubeObject>(resource: DeclaredResource, scope: WatchNamespaces) =>
      new Watched<T>(kube, resource, scope, changed, informerOptions(resource));
    this.#make = () => ({
      classes: watched('gatewayclasses', null),
      gateways: watched('gateways', namespaces),
      routes: watched('httproutes', namespaces),
      grpcRoutes: watched('grpcroutes', namespaces),
      grants: watched('referencegrants', namespaces),
      namespaces: watched('namespaces', null),
      // Only those a Gateway names as a client CA bundle or its parameters, or one of our
      // GatewayClasses as its parameters, matter (a ConfigMap has no generation).
      configMaps: new Watched<ConfigMap & KubeObject>(
        kube,
        'configmaps',
        namespaces,
        (_t, obj) => {
          if (isReferenced(this.#configMapRefs(), obj)) onChange();
        },
        informerOptions('configmaps'),
      ),
    });
    const crdPath = collectionPath('customresourcedefinitions', null);
    this.#crds = KINDS.map(
      (plural) =>
        new Informer<Crd>(
          kube,
          `${crdPath}?fieldSelector=${encodeURIComponent(`metadata.name=${plural}.gateway.networking.k8s.io`)}`,
          () => this.#maybeStart(onChange),
          informerOptions('customresourcedefinitions'),
        ),
    );
    this.synced = Promise.all(this.#crds.map((i) => i.synced)).then(() => this.#maybeStart(onChange));
  }

  /** Whether the CRDs are installed and their objects watched. */
  get serving(): boolean {
    return this.#kinds !== null;
  }

  /**
   * Whether every kind is listed: only then do objects() hold all there is (a Gateway missing
   * from them is gone, and its Service may go).
   */
  get listed(): boolean {
    return this.#listed;
  }

  start(): void {
    for (const i of this.#crds) i.start();
  }

  stop(): void {
    this.#stopped = true;
    for (const i of this.#crds) i.stop();
    if (this.#kinds) for (const w of Object.values(this.#kinds)) w.stop();
  }

  /**
   * Every GatewayClass, Gateway, HTTPRoute, GRPCRoute, ReferenceGrant and Namespace watched, and
   * the ConfigMaps the Gateways and our GatewayClasses name (none before the CRDs exist).
   */
  objects(): Resource[] {
    const k = this.#kinds;
    if (k === null) return [];
    const refs = this.#configMapRefs();
    return [
      ...k.classes.cache.values(),
      ...k.gateways.cache.values(),
      ...k.routes.cache.values(),
      ...k.grpcRoutes.cache.values(),
      ...k.grants.cache.values(),
      ...k.namespaces.cache.values(),
      ...[...k.configMaps.cache.values()].filter((c) => isReferenced(refs, c)),
    ];
  }

  /**
   * "namespace/name" of the ConfigMaps the Gateways (spec.tls.frontend, spec.infrastructure.parametersRef)
   * and our GatewayClasses (spec.parametersRef) name.
   */
  #configMapRefs(): ReadonlySet<string> {
    const k = this.#kinds;
    if (k === null) return new Set();
    const refs = frontendCaRefs(k.gateways.cache.values()).configMaps;
    for (const g of k.gateways.cache.values()) {
      const ref = gatewayParametersConfigMap(g);
      if (ref !== undefined) refs.add(ref);
    }
    for (const gc of k.classes.cache.values()) {
      const ref = gc.spec.controllerName === this.#controllerName ? parametersConfigMap(gc) : undefined;
      if (ref !== undefined) refs.add(ref);
    }
    return refs;
  }

  /** The Secrets and Services those objects name (certificateRefs, backendRefs, the Gateways' own Services). */
  references(): References {
    const k = this.#kinds;
    if (k === null) return { secrets: new Set(), services: new Set() };
    return gatewayApiReferences(k.gateways.cache.values(), [
      ...k.routes.cache.values(),
      ...k.grpcRoutes.cache.values(),
    ]);
  }

  /** The watched object of a status key ("GatewayClass//name", "Gateway/ns/name", "HTTPRoute/ns/name"). */
  object(kind: string, namespace: string, name: string): KubeObject | undefined {
    const k = this.#kinds;
    if (k === null) return undefined;
    if (kind === 'GatewayClass') return k.classes.cache.get(`/${name}`); // cluster-scoped: no namespace
    const key = `${namespace}/${name}`;
    return kind === 'Gateway'
      ? k.gateways.cache.get(key)
      : kind === 'HTTPRoute'
        ? k.routes.cache.get(key)
        : kind === 'GRPCRoute'
          ? k.grpcRoutes.cache.get(key)
          : undefined;
  }

  #maybeStart(onChange: () => void): void {
    if (this.#kinds !== null || this.#stopped) return;
    const established = this.#crds.every((i) =>
      [...i.cache.values()].some((crd) =>
        crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'),
      ),
    );
    if (!established) return;
    const kinds = this.#make();
    this.#kinds = kinds;
    for (const w of Object.values(kinds)) w.start();
    void Promise.all(Object.values(kinds).map((w) => w.synced)).then(() => {
      this.#listed = true;
      if (!this.#stopped) onChange();
    });
  }
}
