/**
 * One issuer's remote JWKS, as the verifier needs it: fetched at start, fetched again once it
 * is older than its max age (the request that finds it so waits for the fetch: a key the
 * provider withdrew stops verifying within that age) and when a token names a kid it does not
 * have (one fetch at a time, at most once per cooldown), and kept when a fetch fails, so an
 * identity provider's outage never locks out tokens whose keys are already known (a failed
 * refresh is tried again after the cooldown). Keys are selected by jose's local JWKS (kid, kty,
 * alg matching).
 */
import { createLocalJWKSet, type JSONWebKeySet, type JWTHeaderParameters } from 'jose';
import type { Span } from '../observability/tracing.ts';
import { DocumentReader, perProcess } from './provider-document.ts';
import { withDefaults } from '../config/defaults.ts';

/** How long a fetched JWKS is trusted before it is fetched again, by default (jose's cacheMaxAge too). */
export const JWKS_MAX_AGE_MS = 600_000;

export interface JwksOptions {
  /** A JWKS older than this is fetched again before it verifies a token (default 10 min). */
  maxAgeMs?: number;
  cooldownMs?: number;
  timeoutMs?: number;
  maxBytes?: number;
  /** Called after each fetch attempt (for metrics and logs). */
  onFetch?: (ok: boolean, error?: string) => void;
}

type Resolver = ReturnType<typeof createLocalJWKSet>;

export class RemoteJwks {
  readonly #o: Required<Omit<JwksOptions, 'onFetch'>> & Pick<JwksOptions, 'onFetch'>;
  readonly #reader: DocumentReader;
  #keys: Resolver | null = null;
  #kids = new Set<string>();
  /** When the keys were last fetched: older than the max age, they are fetched again. */
  #fetchedAt = 0;
  /** When a fetch last failed: a stale set is fetched again only after the cooldown. */
  #failedAt = 0;
  /** When a token's unknown kid last caused a fetch: such fetches are spaced by the cooldown. */
  #lastKidFetch = 0;

  constructor(url: string, opts: JwksOptions = {}) {
    this.#o = withDefaults(
      { maxAgeMs: JWKS_MAX_AGE_MS, cooldownMs: 30_000, timeoutMs: 5_000, maxBytes: 1024 * 1024 },
      opts,
    );
    const onFetch = this.#o.onFetch;
    // A failed fetch keeps the last good keys.
    this.#reader = new DocumentReader(
      url,
      {
        ...this.#o,
        spanName: 'jwks fetch',
        onFetch: (ok, error) => {
          if (!ok) this.#failedAt = Date.now();
          onFetch?.(ok, error);
        },
      },
      (doc) => {
        const jwks = doc as JSONWebKeySet;
        if (!Array.isArray(jwks.keys)) throw new Error('not a JWKS');
        this.#keys = createLocalJWKSet(jwks);
        this.#kids = new Set(jwks.keys.map((k) => k.kid).filter((k): k is string => typeof k === 'string'));
        this.#fetchedAt = Date.now();
      },
    );
    void this.#reader.read(); // at start: no request waits for it (not traced)
  }

  /**
   * A jose key resolver: refreshes a set past its max age, and once (cooldown permitting) for
   * an unknown kid. `parent`: the server span of the request verifying the token (tracing on),
   * the fetch it starts is a child.
   */
  readonly resolve = async (header: JWTHeaderParameters, token: unknown, parent: Span | null = null) => {
    const now = Date.now();
    const unknownKid = header.kid !== undefined && !this.#kids.has(header.kid);
    const stale = now - this.#fetchedAt >= this.#o.maxAgeMs && now - this.#failedAt >= this.#o.cooldownMs;
    if (this.#keys === null || unknownKid || stale) {
      const inflight = this.#reader.inflight;
      if (inflight) await inflight;
      else if (stale || now - this.#lastKidFetch >= this.#o.cooldownMs) {
        if (!stale) this.#lastKidFetch = now;
        await this.#reader.read(parent);
      }
    }
    if (this.#keys === null) throw new Error('no keys for this issuer yet (JWKS unavailable)');
    return this.#keys(header, token as never);
  };
}

const shared = new Map<string, RemoteJwks>();

/** One RemoteJwks per URL and max age for the process: a new snapshot does not fetch every JWKS again. */
export const remoteJwks = (url: string, opts: JwksOptions = {}): RemoteJwks =>
  perProcess(shared, `${url}\n${opts.maxAgeMs ?? JWKS_MAX_AGE_MS}`, () => new RemoteJwks(url, opts));
