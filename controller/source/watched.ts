/**
 * One kind watched in a set of namespaces: an informer per namespace (namespaced list/watch
 * paths, so a namespaced Role suffices), or one cluster-wide informer when the set is "all".
 * Reads like one informer: a merged cache, synced once every namespace is listed. Label and
 * field selectors, when given, are applied by the API server: objects outside them are never
 * sent (and one that leaves them arrives as deleted).
 */
import { collectionPath, type DeclaredResource } from './api-access.ts';
import { type ChangeType, Informer, type InformerOptions, type KubeObject } from './informers.ts';
import type { Kube } from './kube.ts';

/** The namespaces to watch; null: all of them. */
export type WatchNamespaces = readonly string[] | null;

export interface Selectors {
  labelSelector?: string;
  fieldSelector?: string;
}

export interface ReadCache<T> {
  values(): Iterable<T>;
  /** By "namespace/name". */
  get(key: string): T | undefined;
}

export class Watched<T extends KubeObject> {
  readonly #informers = new Map<string | null, Informer<T>>();
  readonly cache: ReadCache<T>;
  readonly synced: Promise<void>;

  constructor(
    kube: Kube,
    resource: DeclaredResource,
    namespaces: WatchNamespaces,
    onChange: (type: ChangeType, obj: T, old?: T) => void,
    opts: InformerOptions = {},
    selectors: Selectors = {},
  ) {
    const params = Object.entries(selectors).filter(([, v]) => v !== undefined && v !== '');
    const query = params.length
      ? `?${params.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}`
      : '';
    for (const ns of namespaces ?? [null])
      this.#informers.set(ns, new Informer<T>(kube, collectionPath(resource, ns) + query, onChange, opts));
    const informers = this.#informers;
    const all = namespaces === null;
    this.cache = {
      *values() {
        for (const i of informers.values()) yield* i.cache.values();
      },
      get(key) {
        const informer = informers.get(all ? null : key.slice(0, key.indexOf('/')));
        return informer?.cache.get(key);
      },
    };
    this.synced = Promise.all([...informers.values()].map((i) => i.synced)).then(() => {});
  }

  start(): this {
    for (const i of this.#informers.values()) i.start();
    return this;
  }

  stop(): void {
    for (const i of this.#informers.values()) i.stop();
  }
}
