/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go does it: the leader renews
 * renewTime every `retryMs`; a candidate takes the Lease once it has seen the same renewTime
 * for longer than leaseDurationSeconds (measured on its own clock from when it saw it, so
 * clock skew between replicas does not matter). Writes carry the resourceVersion read, so two
 * candidates can never both win (the API server answers 409 to the second). On stop the
 * leader empties holderIdentity, so a standby takes over at once.
 */
import { type Kube, KubeError } from './source/kube.ts';
import { withDefaults } from '../dataplane/config/defaults.ts';

interface Lease {
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

export interface LeaderOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseSeconds?: number;
  retryMs?: number;
  onChange: (leading: boolean) => void;
  onError?: (err: unknown) => void;
}

const microTime = (d: Date) => d.toISOString().replace('Z', '000Z');

export class LeaderElector {
  readonly #kube: Kube;
  readonly #o: Required<Omit<LeaderOptions, 'onError'>> & Pick<LeaderOptions, 'onError'>;
  #leading = false;
  #timer: NodeJS.Timeout | null = null;
  #observed: {
    renewTime: string | undefined;
    holder: string | null | undefined;
    at: number;
    duration: number;
  } | null = null;
  #stopped = false;

  constructor(kube: Kube, opts: LeaderOptions) {
    this.#kube = kube;
    this.#o = withDefaults({ leaseSeconds: 15, retryMs: 2_000 }, opts);
  }

  get leading(): boolean {
    return this.#leading;
  }

  get #path() {
    return `/apis/coordination.k8s.io/v1/namespaces/${this.#o.namespace}/leases/${this.#o.name}`;
  }

  start(): void {
    const tick = async () => {
      if (this.#stopped) return;
      try {
        this.#set(await this.#tryAcquireOrRenew());
      } catch (err) {
        this.#o.onError?.(err);
        // Could not renew: past the lease, assume another took over.
        if (this.#leading && this.#observed && Date.now() - this.#observed.at > this.#o.leaseSeconds * 1000)
          this.#set(false);
      }
      if (!this.#stopped) this.#timer = setTimeout(tick, this.#nextTickMs());
    };
    void tick();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (!this.#leading) return;
    this.#set(false);
    try {
      const lease = await this.#kube.get<Lease>(this.#path);
      if (lease.spec.holderIdentity !== this.#o.identity) return;
      await this.#kube.request('PUT', this.#path, {
        ...lease,
        spec: {
          ...lease.spec,
          holderIdentity: null,
          leaseDurationSeconds: 1,
          renewTime: microTime(new Date()),
        },
      });
    } catch (err) {
      this.#o.onError?.(err);
    }
  }

  /**
   * Every retryMs, and for a standby also the moment the holder's lease expires (as observed
   * here): a takeover comes at most lease duration + one retry after the holder's last renewal,
   * not a further retry later.
   */
  #nextTickMs(): number {
    const o = this.#observed;
    if (this.#leading || o === null || o.holder === this.#o.identity || !o.holder) return this.#o.retryMs;
    const left = o.at + o.duration - Date.now() + 10;
    return Math.max(10, Math.min(this.#o.retryMs, left));
  }

  #set(leading: boolean): void {
    if (leading === this.#leading) return;
    this.#leading = leading;
    this.#o.onChange(leading);
  }

  async #tryAcquireOrRenew(): Promise<boolean> {
    const now = new Date();
    const me = this.#o.identity;
    let lease: Lease;
    try {
      lease = await this.#kube.get<Lease>(this.#path);
    } catch (err) {
      if (!(err instanceof KubeError) || err.status !== 404) throw err;
      const fresh: Lease = {
        metadata: { name: this.#o.name, namespace: this.#o.namespace },
        spec: {
          holderIdentity: me,
          leaseDurationSeconds: this.#o.leaseSeconds,
          acquireTime: microTime(now),
          renewTime: microTime(now),
          leaseTransitions: 0,
        },
      };
      try {
        await this.#kube.request(
          'POST',
          `/apis/coordination.k8s.io/v1/namespaces/${this.#o.namespace}/leases`,
          {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            ...fresh,
          },
        );
        this.#observed = { renewTime: fresh.spec.renewTime, holder: me, at: Date.now(), duration: 0 };
        return true;
      } catch (e) {
        if (e instanceof KubeError && e.status === 409) return false;
        throw e;
      }
    }
    const s = lease.spec;
    const duration = (s.leaseDurationSeconds ?? this.#o.leaseSeconds) * 1000;
    let observed = this.#observed;
    if (observed === null || observed.renewTime !== s.renewTime || observed.holder !== s.holderIdentity) {
      observed = { renewTime: s.renewTime, holder: s.holderIdentity, at: Date.now(), duration };
      this.#observed = observed;
    }
    const held = s.holderIdentity !== undefined && s.holderIdentity !== null && s.holderIdentity !== '';
    const expired = Date.now() - observed.at > duration;
    if (held && s.holderIdentity !== me && !expired) return false;
    const taking = s.holderIdentity !== me;
    const next: Lease = {
      ...lease,
      spec: {
        ...s,
        holderIdentity: me,
        leaseDurationSeconds: this.#o.leaseSeconds,
        renewTime: microTime(now),
        ...(taking ? { acquireTime: microTime(now), leaseTransitions: (s.leaseTransitions ?? 0) + 1 } : {}),
      },
    };
    try {
      const written = await this.#kube.request<Lease>('PUT', this.#path, next);
      this.#observed = { renewTime: written.spec.renewTime, holder: me, at: Date.now(), duration: 0 };
      return true;
    } catch (err) {
      if (err instanceof KubeError && err.status === 409) return false;
      throw err;
    }
  }
}
