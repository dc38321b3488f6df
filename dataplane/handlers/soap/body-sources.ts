/**
 * The template sources of one SOAP request: those of every template (path, query, header,
 * claims, consumer) plus body.PATH, a member of the parsed JSON body by dotted path (array
 * items by index). A string, number or boolean is its text; null or absent reads as "". An
 * object or an array has no text: the first one met is remembered (`refused`) and the handler
 * refuses the request naming it, rather than guessing a text for it.
 */
import type { RequestContext } from '../../pipeline/context.ts';
import { RequestSources } from '../../pipeline/transform/sources.ts';

export class BodySources extends RequestSources {
  readonly #json: unknown;
  /** The first body.PATH read that holds an object or an array. */
  refused: string | null = null;

  constructor(ctx: RequestContext, params: Readonly<Record<string, string>> | null, json: unknown) {
    super(ctx, params, false);
    this.#json = json;
  }

  body(path: string): string {
    let v: unknown = this.#json;
    for (const name of path.split('.')) {
      if (typeof v !== 'object' || v === null) return '';
      if (Array.isArray(v)) v = /^\d+$/.test(name) ? v[Number(name)] : undefined;
      else v = Object.hasOwn(v, name) ? (v as Record<string, unknown>)[name] : undefined;
    }
    if (typeof v === 'string') return v;
    if (typeof v === 'number' || typeof v === 'boolean') return String(v);
    if (typeof v === 'object' && v !== null) this.refused ??= path;
    return '';
  }
}
