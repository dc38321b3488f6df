/**
 * request-transformer: edits the upstream request's headers, in Kong's order: remove, rename,
 * replace (only when present), add (only when absent), append. The "Name:value" strings are
 * split once when the snapshot is built; values were checked for CR/LF/NUL by the config schema,
 * and are checked again here so a table that skipped validation still cannot inject a header.
 */
import { HEADER_VALUE } from '../../config/http-grammar.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { definePlugin } from '../types.ts';
import { manifest } from './manifest.ts';

type Pair = readonly [name: string, value: string];

function pairs(list: string[] | undefined): Pair[] {
  return (list ?? []).map((entry) => {
    const colon = entry.indexOf(':');
    const name = entry.slice(0, colon).trim().toLowerCase();
    const value = entry.slice(colon + 1).trim();
    if (!name || !HEADER_VALUE.test(value))
      throw new Error(`request-transformer: unsafe header entry ${JSON.stringify(entry)}`);
    return [name, value] as const;
  });
}

export default definePlugin(manifest, {
  create(config) {
    const remove = (config.remove?.headers ?? []).map((h) => h.toLowerCase());
    const rename = pairs(config.rename?.headers).map(([from, to]) => [from, to.toLowerCase()] as const);
    const replace = pairs(config.replace?.headers);
    const add = pairs(config.add?.headers);
    const append = pairs(config.append?.headers);
    const hooks = {
      onRequest(ctx: RequestContext): void {
        const h = ctx.headers;
        for (const name of remove) delete h[name];
        for (const [from, to] of rename) {
          const v = h[from];
          if (v !== undefined) {
            delete h[from];
            h[to] = v;
          }
        }
        for (const [name, value] of replace) if (h[name] !== undefined) h[name] = value;
        for (const [name, value] of add) if (h[name] === undefined) h[name] = value;
        for (const [name, value] of append) h[name] = h[name] === undefined ? value : `${h[name]}, ${value}`;
      },
    };
    return { bind: () => hooks };
  },
});
