/**
 * One issuer's remote JWKS, as the verifier needs it: fetched at start, fetched again when a
 * token names a kid it does not have (one fetch at a time, at most once per cooldown), and
 * kept when a fetch fails, so an identity provider's outage never locks out tokens whose keys
 * are already known. Keys are selected by jose's local JWKS (kid, kty, alg matching).
 */
import { createLocalJWKSet, type JSONWebKeySet, type JWTHeaderParameters } from 'jose';
import { fetchJson } from './fetch-json.ts';

export interface JwksOptions {
  cooldownMs?: number;
  timeoutMs?: number;
  maxBytes?: number;
  /** Called after each fetch attempt (for metrics and logs). */
  onFetch?: (ok: boolean, error?: string) => void;
}

type Resolver = ReturnType<typeof createLocalJWKSet>;

export class RemoteJwks {
  readonly #url: string;
  readonly #o: Required<Omit<JwksOptions, 'onFetch'>> & Pick<JwksOptions, 'onFetch'>;
  #keys: Resolver | null = null;
  #kids = new Set<string>();
  #inflight: Promise<void> | null = null;
  /** When a token's unknown kid last caused a fetch: such fetches are spaced by the cooldown. */
  #lastKidFetch = 0;

  constructor(url: string, opts: JwksOptions = {}) {
    this.#url = url;
    this.#o = { cooldownMs: 30_000, timeoutMs: 5_000, maxBytes: 1024 * 1024, ...opts };
    void this.#refresh();
  }

  /** A jose key resolver: refreshes once (cooldown permitting) for an unknown kid. */
  readonly resolve = async (header: JWTHeaderParameters, token: unknown) => {
    const unknownKid = header.kid !== undefined && !this.#kids.has(header.kid);
    if (this.#keys === null || unknownKid) {
      if (this.#inflight) await this.#inflight;
      else if (Date.now() - this.#lastKidFetch >= this.#o.cooldownMs) {
        this.#lastKidFetch = Date.now();
        await this.#refresh();
      }
    }
    if (this.#keys === null) throw new Error('no keys for this issuer yet (JWKS unavailable)');
    return this.#keys(header, token as never);
  };

  #refresh(): Promise<void> {
    this.#inflight ??= (async () => {
      try {
        const jwks = (await fetchJson(this.#url, this.#o.timeoutMs, this.#o.maxBytes)) as JSONWebKeySet;
        if (!Array.isArray(jwks.keys)) throw new Error('not a JWKS');
        this.#keys = createLocalJWKSet(jwks);
        this.#kids = new Set(jwks.keys.map((k) => k.kid).filter((k): k is string => typeof k === 'string'));
        this.#o.onFetch?.(true);
      } catch (err) {
        // Keep the last good keys.
        this.#o.onFetch?.(false, (err as Error).message);
      } finally {
        this.#inflight = null;
      }
    })();
    return this.#inflight;
  }
}

const shared = new Map<string, RemoteJwks>();

/** One RemoteJwks per URL for the process: a new snapshot does not fetch every JWKS again. */
export function remoteJwks(url: string, opts: JwksOptions = {}): RemoteJwks {
  let j = shared.get(url);
  if (j === undefined) {
    if (shared.size >= 256) shared.delete(shared.keys().next().value!);
    j = new RemoteJwks(url, opts);
    shared.set(url, j);
  }
  return j;
}
