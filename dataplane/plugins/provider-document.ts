/**
 * GET a provider document (a JWKS, OpenID metadata) as JSON: 200 only, time and size bounded.
 *
 * Tracing: a read a request waits for (its first, or one its token's unknown kid starts) is a
 * client span under that request's server span. Reads no request waits for (at start, the
 * periodic refresh of metadata, one already under way when a request comes) are not traced:
 * they belong to no request, and a root span per refresh would be noise; their failures are
 * logged (onFetch) and the last good document kept.
 */
import { request } from 'undici';
import { endAttemptSpan, type Span, startFetchSpan } from '../observability/tracing.ts';

export async function fetchJson(
  url: string,
  timeoutMs: number,
  maxBytes: number,
  parent: Span | null = null,
  spanName = 'provider document',
): Promise<unknown> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const span = parent === null ? null : startFetchSpan(parent, spanName, 'GET', url, headers);
  let status = 0;
  try {
    const res = await request(url, { headersTimeout: timeoutMs, bodyTimeout: timeoutMs, headers });
    status = res.statusCode;
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new Error(`${url} answered ${res.statusCode}`);
    }
    const text = await res.body.text();
    if (text.length > maxBytes) throw new Error(`${url}: the document is too large`);
    const doc = JSON.parse(text) as unknown;
    if (span !== null) endAttemptSpan(span, status, null);
    return doc;
  } catch (err) {
    if (span !== null) endAttemptSpan(span, status, err as Error);
    throw err;
  }
}

/**
 * A provider document read again on demand, one read at a time: `apply` takes the parsed JSON
 * (and throws if it is not what it should be); a failed read keeps what was applied before.
 * `onFetch` hears every outcome (for logs and metrics).
 */
export interface ReaderOptions {
  timeoutMs: number;
  maxBytes: number;
  /** The name of a read's span (tracing on, a request waiting). */
  spanName: string;
  onFetch?: (ok: boolean, error?: string) => void;
}

export class DocumentReader {
  readonly #url: string;
  readonly #opts: ReaderOptions;
  readonly #apply: (doc: unknown) => void;
  #inflight: Promise<void> | null = null;

  constructor(url: string, opts: ReaderOptions, apply: (doc: unknown) => void) {
    this.#url = url;
    this.#opts = opts;
    this.#apply = apply;
  }

  /** A read under way, or null. */
  get inflight(): Promise<void> | null {
    return this.#inflight;
  }

  /** Starts a read (a child span of `parent`, the server span of a request waiting for it), or returns the one under way. */
  read(parent: Span | null = null): Promise<void> {
    this.#inflight ??= (async () => {
      try {
        const o = this.#opts;
        this.#apply(await fetchJson(this.#url, o.timeoutMs, o.maxBytes, parent, o.spanName));
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
