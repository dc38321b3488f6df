/**
 * One OpenID provider's metadata (OpenID Connect Discovery 1.0), as the oidc plugin needs it:
 * read from <issuer>/.well-known/openid-configuration at start, read again in the background
 * once older than the refresh period, and kept when a read fails, so a provider outage never
 * locks out tokens whose keys are already known. A document naming another issuer is refused
 * (§4.3). While none was ever read, a request may trigger a read at most once per cooldown.
 */
import { fetchJson } from '../jwt/fetch-json.ts';
import { type RemoteJwks, remoteJwks } from '../jwt/jwks.ts';

export interface ProviderMetadata {
  issuer: string;
  jwksUri: string;
  introspectionEndpoint: string | null;
}

export interface DiscoveryOptions {
  refreshMs: number;
  /** Spacing of reads while none succeeded yet, and after a failed refresh. */
  cooldownMs?: number;
  timeoutMs?: number;
  onFetch?: (ok: boolean, error?: string) => void;
}

export class Discovery {
  readonly #url: string;
  readonly #issuer: string;
  readonly #o: Required<Omit<DiscoveryOptions, 'onFetch'>> & Pick<DiscoveryOptions, 'onFetch'>;
  #metadata: ProviderMetadata | null = null;
  #jwks: RemoteJwks | null = null;
  #readAt = 0;
  #triedAt = 0;
  #inflight: Promise<void> | null = null;

  constructor(issuer: string, opts: DiscoveryOptions) {
    this.#issuer = issuer;
    this.#url = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
    this.#o = { cooldownMs: 5_000, timeoutMs: 5_000, ...opts };
    void this.#read();
  }

  /** The last good metadata and its JWKS (null while none was ever read); refreshes in the background when due. */
  current(): { metadata: ProviderMetadata; jwks: RemoteJwks } | null {
    const now = Date.now();
    if (
      this.#inflight === null &&
      now - this.#triedAt >= this.#o.cooldownMs &&
      (this.#metadata === null || now - this.#readAt >= this.#o.refreshMs)
    )
      void this.#read();
    return this.#metadata === null ? null : { metadata: this.#metadata, jwks: this.#jwks! };
  }

  /** current(), after waiting for a read under way (the first one, or the one a request triggered). */
  async ready(): Promise<{ metadata: ProviderMetadata; jwks: RemoteJwks } | null> {
    const now = this.current();
    if (now !== null || this.#inflight === null) return now;
    await this.#inflight;
    return this.current();
  }

  #read(): Promise<void> {
    this.#triedAt = Date.now();
    this.#inflight ??= (async () => {
      try {
        const doc = (await fetchJson(this.#url, this.#o.timeoutMs, 256 * 1024)) as Record<string, unknown>;
        if (doc.issuer !== this.#issuer)
          throw new Error(`the metadata names another issuer (${String(doc.issuer)})`);
        if (typeof doc.jwks_uri !== 'string' || !/^https?:\/\//.test(doc.jwks_uri))
          throw new Error('the metadata has no jwks_uri');
        const ie = doc.introspection_endpoint;
        this.#metadata = {
          issuer: this.#issuer,
          jwksUri: doc.jwks_uri,
          introspectionEndpoint: typeof ie === 'string' && /^https?:\/\//.test(ie) ? ie : null,
        };
        this.#jwks = remoteJwks(doc.jwks_uri, { onFetch: this.#o.onFetch });
        this.#readAt = Date.now();
        this.#o.onFetch?.(true);
      } catch (err) {
        // Keep the last good metadata.
        this.#o.onFetch?.(false, (err as Error).message);
      } finally {
        this.#inflight = null;
      }
    })();
    return this.#inflight;
  }
}

const shared = new Map<string, Discovery>();

/** One Discovery per issuer for the process: a new snapshot does not read every provider again. */
export function discovery(issuer: string, opts: DiscoveryOptions): Discovery {
  const id = `${issuer}\n${opts.refreshMs}`;
  let d = shared.get(id);
  if (d === undefined) {
    if (shared.size >= 256) shared.delete(shared.keys().next().value!);
    d = new Discovery(issuer, opts);
    shared.set(id, d);
  }
  return d;
}
