/**
 * The template sources of one request (config/template.ts): read lazily, the query parsed at
 * most once. Sources read the request as it reached the transformer, before its own
 * edits. Claims come from the consumer (set by the authenticating plugin), so the
 * transformers know nothing of jwt.
 */
import type { Sources } from '../../config/template.ts';
import type { RequestContext } from '../context.ts';

const NONE: Readonly<Record<string, string>> = {};

export class RequestSources implements Sources {
  readonly #ctx: RequestContext;
  /** Path parameters captured by the transformer's path pattern. */
  readonly #params: Readonly<Record<string, string>>;
  /** The request's headers and query as they reached the transformer, before its own edits. */
  readonly #headers: Readonly<Record<string, string>>;
  readonly #rawQuery: string;
  #query: URLSearchParams | null = null;

  /** `copyHeaders`: the transformer edits headers that templates also read; they read a copy taken now. */
  constructor(ctx: RequestContext, params: Readonly<Record<string, string>> | null, copyHeaders: boolean) {
    this.#ctx = ctx;
    this.#params = params ?? NONE;
    this.#headers = copyHeaders ? { ...ctx.headers } : ctx.headers;
    this.#rawQuery = ctx.query;
  }

  consumer(): string {
    return this.#ctx.consumer?.id ?? '';
  }

  route(): string {
    return this.#ctx.route.id;
  }

  claim(name: string): string {
    const claims = this.#ctx.consumer?.claims;
    const v = claims !== undefined && Object.hasOwn(claims, name) ? claims[name] : undefined;
    return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : '';
  }

  header(name: string): string {
    return this.#headers[name] ?? '';
  }

  query(name: string): string {
    this.#query ??= new URLSearchParams(this.#rawQuery);
    return this.#query.get(name) ?? '';
  }

  path(name: string): string {
    return Object.hasOwn(this.#params, name) ? this.#params[name] : '';
  }
}
