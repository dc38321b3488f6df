/**
 * The Ingress inputs: Ingresses in the watched namespaces and IngressClasses (cluster-scoped).
 * An Ingress event matters when its spec or annotations change (annotations carry ingress-nginx's
 * settings, and an edit of them leaves the generation alone), not on status writes (ours). Where
 * the IngressClass API is not served (404), classes are taken as none: Ingresses are still
 * served by the class name (--ingress-class).
 */
import type { Resource } from '../api/index.ts';
import type { Ingress, IngressClass } from '../api/ingress.ts';
import { readAnnotations } from '../ingress/annotations.ts';
import { isSluices } from '../ingress/classes.ts';
import type { ChangeType, InformerOptions, KubeObject } from './informers.ts';
import type { Kube } from './kube.ts';
import { KubeError } from './kube.ts';
import type { References } from './relevance.ts';
import { Watched, type WatchNamespaces } from './watched.ts';

type Watchable<T> = T & KubeObject;

export class IngressSource {
  readonly #ingresses: Watched<Watchable<Ingress>>;
  readonly #classes: Watched<Watchable<IngressClass>>;
  readonly #className: string;
  readonly synced: Promise<void>;

  constructor(
    kube: Kube,
    namespaces: WatchNamespaces,
    className: string,
    /** An Ingress or IngressClass changed in a way that can change the snapshot. */
    onChange: () => void,
    informerOptions: (resource: string) => InformerOptions,
  ) {
    this.#className = className;
    this.#ingresses = new Watched(
      kube,
      'ingresses',
      namespaces,
      (t: ChangeType, obj, old) => {
        if (t !== 'modified' || old?.metadata.generation !== obj.metadata.generation) onChange();
        else if (JSON.stringify(annotationsOf(old)) !== JSON.stringify(annotationsOf(obj))) onChange();
      },
      informerOptions('ingresses'),
    );
    let notServed: () => void = () => {};
    const absent = new Promise<void>((resolve) => {
      notServed = resolve;
    });
    const classOptions = informerOptions('ingressclasses');
    this.#classes = new Watched(kube, 'ingressclasses', null, () => onChange(), {
      ...classOptions,
      onError: (err, attempt) => {
        if (err instanceof KubeError && err.status === 404) notServed();
        classOptions.onError?.(err, attempt);
      },
    });
    this.synced = Promise.all([this.#ingresses.synced, Promise.race([this.#classes.synced, absent])]).then(
      () => {},
    );
  }

  start(): void {
    this.#ingresses.start();
    this.#classes.start();
  }

  stop(): void {
    this.#ingresses.stop();
    this.#classes.stop();
  }

  /** Every Ingress and IngressClass watched (build picks Sluice's). */
  objects(): Resource[] {
    return [...this.#classes.cache.values(), ...this.#ingresses.cache.values()];
  }

  /** The watched Ingress "namespace/name". */
  ingress(key: string): Watchable<Ingress> | undefined {
    return this.#ingresses.cache.get(key);
  }

  /** The Secrets (spec.tls, auth-secret) and Services (backends, default-backend) Sluice's Ingresses name. */
  references(): References {
    const ours = isSluices(this.#classes.cache.values(), this.#className);
    const secrets = new Set<string>();
    const services = new Set<string>();
    for (const ing of this.#ingresses.cache.values()) {
      if (!ours(ing)) continue;
      const ns = ing.metadata.namespace ?? 'default';
      for (const t of ing.spec?.tls ?? []) if (t.secretName) secrets.add(`${ns}/${t.secretName}`);
      // auth-secret (auth-type: basic): the htpasswd hashes the basic-auth plugin is given.
      const effects = readAnnotations(ing.metadata.annotations, ns).effects;
      const auth = effects.basicAuth;
      if (auth.type === 'basic' && auth.secret) secrets.add(`${ns}/${auth.secret}`);
      // default-backend: the Service answering custom-http-errors.
      if (effects.defaultBackend) services.add(`${ns}/${effects.defaultBackend}`);
      const backends = [
        ing.spec?.defaultBackend,
        ...(ing.spec?.rules ?? []).flatMap((r) => (r.http?.paths ?? []).map((p) => p.backend)),
      ];
      for (const b of backends) if (b?.service?.name) services.add(`${ns}/${b.service.name}`);
    }
    return { secrets, services };
  }
}

function annotationsOf(obj: KubeObject | undefined): Record<string, string> | undefined {
  return (obj?.metadata as { annotations?: Record<string, string> } | undefined)?.annotations;
}
