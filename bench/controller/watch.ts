/** Watching GatewayRoutes become Programmed on every pod (a watch, not polling). */
import { Informer, type KubeObject } from '../../controller/source/informers.ts';
import type { Kube } from '../../controller/source/kube.ts';

import { HOSTS, NS } from './objects.ts';

// Watching Programmed.

export interface RouteObject extends KubeObject {
  status?: { conditions?: { type: string; status: string; message: string; observedGeneration?: number }[] };
}
export const PROGRAMMED = `Running on ${HOSTS.length} of ${HOSTS.length} pods.`;
export function isProgrammed(o: RouteObject): boolean {
  const c = o.status?.conditions?.find((x) => x.type === 'Programmed');
  return (
    c !== undefined &&
    c.status === 'True' &&
    c.message === PROGRAMMED &&
    c.observedGeneration === o.metadata.generation
  );
}

/** Programmed routes by name, kept by a watch; `until` resolves when a predicate on it holds. */
export class Tracker {
  readonly programmed = new Set<string>();
  readonly informer: Informer<RouteObject>;
  #waiters: { test: () => boolean; done: (t: number) => void }[] = [];

  constructor(kube: Kube) {
    this.informer = new Informer<RouteObject>(
      kube,
      `/apis/sluice.dev/v1alpha1/namespaces/${NS}/gatewayroutes`,
      (type, obj) => {
        if (type !== 'deleted' && isProgrammed(obj)) this.programmed.add(obj.metadata.name);
        else this.programmed.delete(obj.metadata.name);
        const now = performance.now();
        this.#waiters = this.#waiters.filter((w) => {
          if (!w.test()) return true;
          w.done(now);
          return false;
        });
      },
    );
  }

  until(what: string, test: () => boolean, timeoutMs: number): Promise<number> {
    if (test()) return Promise.resolve(performance.now());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`timed out after ${timeoutMs} ms: ${what}`)),
        timeoutMs,
      );
      this.#waiters.push({
        test,
        done: (t) => {
          clearTimeout(timer);
          resolve(t);
        },
      });
    });
  }

  generation(name: string): number | undefined {
    return this.informer.cache.get(`${NS}/${name}`)?.metadata.generation;
  }
}
