/**
 * The leader's writes for Sluice's Ingresses:
 *   - status.loadBalancer.ingress: the address of the Service --publish-service names, as
 *     ingress-nginx's --publish-service: its load-balancer ingress, else its cluster IP (the one
 *     rule Gateways' addresses follow, gateway-api-status.ts). A merge patch of status, only when
 *     it differs; none without --publish-service or while that Service is not known.
 *   - its release: an Ingress that leaves Sluice's classes (another ingressClassName, the class
 *     annotation gone) loses the address Sluice wrote, as ingress-nginx clears the status of the
 *     Ingresses it no longer serves. Only Sluice's address (the publish Service's, or the one this
 *     writer last wrote), and atomically: a JSON patch that tests the value first, so the
 *     address another controller has written meanwhile stays.
 *   - a Warning Event on the Ingress for each thing of it that is not served as written (an
 *     annotation not honoured, a snippet never executed, a value that cannot be read, a missing
 *     backend or Secret, a path left out, a conflict), once when it first appears: a rebuild for
 *     any other object does not repeat it (the recorder's correlator counts a repeat anyway).
 */
import { INGRESS_API_VERSION, type Ingress, type LoadBalancerIngress } from '../api/ingress.ts';
import type { Service } from '../api/service.ts';
import type { IngressReport } from '../ingress/index.ts';
import type { IngressSource } from '../source/ingress-source.ts';
import type { KubeObject } from '../source/informers.ts';
import type { Kube } from '../source/kube.ts';
import type { ReadCache } from '../source/watched.ts';
import type { EventRecorder } from './events.ts';
import { gatewayAddresses } from './gateway-api-status.ts';
import { newer } from './status-writer.ts';
import { WriteQueue } from './write-queue.ts';

export interface IngressWriterOptions {
  kube: Kube;
  source: IngressSource;
  /** The Services informer's cache (the watched namespaces). */
  services: ReadCache<Service & KubeObject>;
  /** "namespace/name" of --publish-service; null: status is not written. */
  publishService: string | null;
  events: EventRecorder;
  onStatusWrite?: (ok: boolean, key: string, status: unknown) => void;
}

export class IngressWriter {
  readonly #o: IngressWriterOptions;
  readonly #queue = new WriteQueue();
  #reports: ReadonlyMap<string, IngressReport> = new Map();
  #active = false;
  /** Per Ingress, the problems already reported (while leading). */
  readonly #reported = new Map<string, Set<string>>();
  /** What this writer last wrote per Ingress: the cache lags behind our own writes. */
  readonly #written = new Map<string, { resourceVersion: string; text: string }>();

  constructor(o: IngressWriterOptions) {
    this.#o = o;
  }

  setActive(active: boolean): void {
    this.#active = active;
    this.#queue.setActive(active);
    if (active) this.update();
    else this.#reported.clear(); // a new leader (this one again, later) reports afresh
  }

  /** A build's reports of Sluice's Ingresses. */
  built(reports: ReadonlyMap<string, IngressReport>): void {
    this.#reports = reports;
    this.update();
  }

  /** A Service event: the publish Service's address may have changed. */
  serviceObserved(obj: KubeObject): void {
    if (`${obj.metadata.namespace}/${obj.metadata.name}` === this.#o.publishService) this.update();
  }

  update(): void {
    if (!this.#active) return;
    for (const key of this.#reported.keys()) if (!this.#reports.has(key)) this.#reported.delete(key);
    for (const [key, report] of this.#reports) {
      this.#events(key, report);
      if (this.#o.publishService !== null) this.#wantStatus(key);
    }
    if (this.#o.publishService === null) return; // never written, nothing to release
    for (const obj of this.#o.source.objects()) {
      if (obj.kind !== 'Ingress') continue;
      const key = `${obj.metadata.namespace}/${obj.metadata.name}`;
      if (!this.#reports.has(key) && ((obj as Ingress).status?.loadBalancer?.ingress?.length ?? 0) > 0)
        this.#wantReleased(key);
    }
  }

  /** The addresses Sluice's Ingresses show: the publish Service's (undefined while it is not known). */
  #addresses(): LoadBalancerIngress[] | undefined {
    const service = this.#o.services.get(this.#o.publishService!);
    return (
      service &&
      gatewayAddresses(service).map((a) => (a.type === 'IPAddress' ? { ip: a.value } : { hostname: a.value }))
    );
  }

  #events(key: string, report: IngressReport): void {
    const ing = this.#o.source.ingress(key);
    if (ing === undefined) return;
    const seen = this.#reported.get(key) ?? new Set<string>();
    const now = new Set<string>();
    for (const p of report.problems) {
      const message = `${p.field}: ${p.message}`;
      const id = `${p.reason}\n${message}`;
      now.add(id);
      if (seen.has(id)) continue;
      void this.#o.events.warning(
        {
          apiVersion: INGRESS_API_VERSION,
          kind: 'Ingress',
          namespace: ing.metadata.namespace!,
          name: ing.metadata.name,
          uid: (ing.metadata as { uid?: string }).uid,
        },
        p.reason,
        message,
      );
    }
    this.#reported.set(key, now);
  }

  #wantStatus(key: string): void {
    this.#queue.want(key, () => {
      const ing = this.#o.source.ingress(key);
      const wanted = this.#addresses();
      if (ing === undefined || wanted === undefined) return null;
      const text = JSON.stringify(wanted);
      if (JSON.stringify(ing.status?.loadBalancer?.ingress ?? []) === text) return null;
      const mine = this.#written.get(key);
      if (mine?.text === text && !newer(ing.metadata.resourceVersion, mine.resourceVersion)) return null;
      const [ns, name] = key.split('/');
      const status = { loadBalancer: { ingress: wanted } };
      return this.#o.kube
        .request<KubeObject>(
          'PATCH',
          `/apis/networking.k8s.io/v1/namespaces/${ns}/ingresses/${name}/status`,
          { status },
          'application/merge-patch+json',
        )
        .then(
          (written) => {
            const resourceVersion = written?.metadata?.resourceVersion;
            if (resourceVersion) this.#written.set(key, { resourceVersion, text });
            this.#o.onStatusWrite?.(true, `Ingress/${key}`, status);
            return 'done' as const;
          },
          (err: { status?: number }) => {
            this.#o.onStatusWrite?.(false, `Ingress/${key}`, status);
            return err.status === 404 ? ('done' as const) : ('retry' as const);
          },
        );
    });
  }

  /** Clears the address of an Ingress that is not Sluice's any more, if it is Sluice's address. */
  #wantReleased(key: string): void {
    this.#queue.want(key, () => {
      const ing = this.#o.source.ingress(key);
      if (ing === undefined || this.#reports.has(key)) return null; // gone, or Sluice's again
      const shown = ing.status?.loadBalancer?.ingress ?? [];
      const text = JSON.stringify(shown);
      const mine = this.#written.get(key);
      // Released already, and the cache has not seen it yet.
      if (mine?.text === '[]' && !newer(ing.metadata.resourceVersion, mine.resourceVersion)) return null;
      if (shown.length === 0 || (text !== mine?.text && text !== JSON.stringify(this.#addresses() ?? [])))
        return null; // nothing there, or another controller's address
      const [ns, name] = key.split('/');
      return this.#o.kube
        .request<KubeObject>(
          'PATCH',
          `/apis/networking.k8s.io/v1/namespaces/${ns}/ingresses/${name}/status`,
          [
            { op: 'test', path: '/status/loadBalancer/ingress', value: shown },
            { op: 'remove', path: '/status/loadBalancer/ingress' },
          ],
          'application/json-patch+json',
        )
        .then(
          (written) => {
            const resourceVersion = written?.metadata?.resourceVersion;
            if (resourceVersion) this.#written.set(key, { resourceVersion, text: '[]' });
            this.#o.onStatusWrite?.(true, `Ingress/${key}`, { loadBalancer: {} });
            return 'done' as const;
          },
          (err: { status?: number }) => {
            this.#o.onStatusWrite?.(false, `Ingress/${key}`, { loadBalancer: {} });
            // 404: gone. 422: the test failed, the address is not the one seen (another's now).
            return err.status === 404 || err.status === 422 ? ('done' as const) : ('retry' as const);
          },
        );
    });
  }
}
