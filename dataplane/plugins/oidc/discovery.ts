/**
 * One OpenID provider's metadata (OpenID Connect Discovery 1.0), as the oidc plugin needs it:
 * read from <issuer>/.well-known/openid-configuration at start, read again in the background
 * once older than the refresh period (its JWKS too: jwks.ts, the same max age), and kept when a read fails, so a provider outage never
 * locks out tokens whose keys are already known. A document naming another issuer is refused
 * (§4.3). While none was ever read, a request may trigger a read at most once per cooldown.
 */
import type { Span } from '../../observability/tracing.ts';
import { DocumentReader, perProcess } from '../provider-document.ts';
import { type RemoteJwks, remoteJwks } from '../jwks.ts';
import { withDefaults } from '../../config/defaults.ts';

export interface ProviderMetadata {
  issuer: string;
  jwksUri: string;
  introspectionEndpoint: string | null;
  /** For the browser login: the authorization code flow and logout (RP-initiated). */
  authorizationEndpoint: string | null;
  tokenEndpoint: string | null;
  endSessionEndpoint: string | null;
}

export interface DiscoveryOptions {
  refreshMs: number;
  /** Spacing of reads while none succeeded yet, and after a failed refresh. */
  cooldownMs?: number;
  timeoutMs?: number;
  onFetch?: (ok: boolean, error?: string) => void;
}

export class Discovery {
  readonly #issuer: string;
  readonly #o: Required<Omit<DiscoveryOptions, 'onFetch'>> & Pick<DiscoveryOptions, 'onFetch'>;
  readonly #reader: DocumentReader;
  #metadata: ProviderMetadata | null = null;
  #jwks: RemoteJwks | null = null;
  #readAt = 0;
  #triedAt = 0;

  constructor(issuer: string, opts: DiscoveryOptions) {
    this.#issuer = issuer;
    this.#o = withDefaults({ cooldownMs: 5_000, timeoutMs: 5_000 }, opts);
    const url = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
    // A failed read keeps the last good metadata.
    this.#reader = new DocumentReader(
      url,
      { ...this.#o, maxBytes: 256 * 1024, spanName: 'oidc discovery' },
      (doc) => this.#apply(doc),
    );
    this.#read(null);
  }

  /**
   * The last good metadata and its JWKS (null while none was ever read); refreshes in the
   * background when due. `parent`: the server span of the request asking (tracing on); only a
   * read it will wait for (no metadata yet) is its child span: a refresh runs for no request.
   */
  current(parent: Span | null = null): { metadata: ProviderMetadata; jwks: RemoteJwks } | null {
    const now = Date.now();
    if (
      this.#reader.inflight === null &&
      now - this.#triedAt >= this.#o.cooldownMs &&
      (this.#metadata === null || now - this.#readAt >= this.#o.refreshMs)
    )
      this.#read(this.#metadata === null ? parent : null);
    return this.#metadata === null ? null : { metadata: this.#metadata, jwks: this.#jwks! };
  }

  /** current(), after waiting for a read under way (the first one, or the one a request triggered). */
  async ready(parent: Span | null = null): Promise<{ metadata: ProviderMetadata; jwks: RemoteJwks } | null> {
    const now = this.current(parent);
    const inflight = this.#reader.inflight;
    if (now !== null || inflight === null) return now;
    await inflight;
    return this.current();
  }

  #read(parent: Span | null): void {
    this.#triedAt = Date.now();
    void this.#reader.read(parent);
  }

  #apply(raw: unknown): void {
    const doc = (raw ?? {}) as Record<string, unknown>;
    if (doc.issuer !== this.#issuer)
      throw new Error(`the metadata names another issuer (${String(doc.issuer)})`);
    if (typeof doc.jwks_uri !== 'string' || !/^https?:\/\//.test(doc.jwks_uri))
      throw new Error('the metadata has no jwks_uri');
    const url = (v: unknown) => (typeof v === 'string' && /^https?:\/\//.test(v) ? v : null);
    this.#metadata = {
      issuer: this.#issuer,
      jwksUri: doc.jwks_uri,
      introspectionEndpoint: url(doc.introspection_endpoint),
      authorizationEndpoint: url(doc.authorization_endpoint),
      tokenEndpoint: url(doc.token_endpoint),
      endSessionEndpoint: url(doc.end_session_endpoint),
    };
    // The keys age as the metadata does: discoveryRefresh says "metadata and keys".
    this.#jwks = remoteJwks(doc.jwks_uri, { maxAgeMs: this.#o.refreshMs, onFetch: this.#o.onFetch });
    this.#readAt = Date.now();
  }
}

const shared = new Map<string, Discovery>();

/** One Discovery per issuer for the process: a new snapshot does not read every provider again. */
export const discovery = (issuer: string, opts: DiscoveryOptions): Discovery =>
  perProcess(shared, `${issuer}\n${opts.refreshMs}`, () => new Discovery(issuer, opts));
