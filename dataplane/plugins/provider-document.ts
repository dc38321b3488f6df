/** GET a provider document (a JWKS, OpenID metadata) as JSON: 200 only, time and size bounded. */
import { request } from 'undici';

export async function fetchJson(url: string, timeoutMs: number, maxBytes: number): Promise<unknown> {
  const res = await request(url, {
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    headers: { accept: 'application/json' },
  });
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new Error(`${url} answered ${res.statusCode}`);
  }
  const text = await res.body.text();
  if (text.length > maxBytes) throw new Error(`${url}: the document is too large`);
  return JSON.parse(text);
}

/**
 * A provider document read again on demand, one read at a time: `apply` takes the parsed JSON
 * (and throws if it is not what it should be); a failed read keeps what was applied before.
 * `onFetch` hears every outcome (for logs and metrics).
 */
export class DocumentReader {
  readonly #url: string;
  readonly #opts: { timeoutMs: number; maxBytes: number; onFetch?: (ok: boolean, error?: string) => void };
  readonly #apply: (doc: unknown) => void;
  #inflight: Promise<void> | null = null;

  constructor(
    url: string,
    opts: { timeoutMs: number; maxBytes: number; onFetch?: (ok: boolean, error?: string) => void },
    apply: (doc: unknown) => void,
  ) {
    this.#url = url;
    this.#opts = opts;
    this.#apply = apply;
  }

  /** A read under way, or null. */
  get inflight(): Promise<void> | null {
    return this.#inflight;
  }

  /** Starts a read, or returns the one under way. */
  read(): Promise<void> {
    this.#inflight ??= (async () => {
      try {
        this.#apply(await fetchJson(this.#url, this.#opts.timeoutMs, this.#opts.maxBytes));
        this.#opts.onFetch?.(true);
      } catch (err) {
        this.#opts.onFetch?.(false, (err as Error).message);
      } finally {
        this.#inflight = null;
      }
    })();
    return this.#inflight;
  }
}

/** One instance per key for the process (the 256 latest): a new snapshot does not read every provider again. */
export function perProcess<T>(shared: Map<string, T>, key: string, make: () => T): T {
  let v = shared.get(key);
  if (v === undefined) {
    if (shared.size >= 256) shared.delete(shared.keys().next().value!);
    v = make();
    shared.set(key, v);
  }
  return v;
}
