/**
 * Header verbs, for request headers and response headers alike, in Kong's order: remove,
 * rename, replace (only when present), add (only when absent), append. Names are lower-cased
 * and values compiled once; a value whose looked-up parts would carry CR, LF or NUL refuses the
 * request rather than being altered.
 */
import { HEADER_VALUE } from '../../config/http-grammar.ts';
import { headerValue, render, type Sources, type Template } from '../../config/template.ts';
import { splitPair } from '../../config/transform-schema.ts';

type Headers = Record<string, string | string[]>;

/** The sources of verbs whose values are all literal: rendering a literal never reads one. */
export const NO_SOURCES: Sources = new Proxy({} as Sources, {
  get() {
    throw new Error('header verbs: a literal template read a source');
  },
});

export interface HeaderVerbs {
  remove: string[];
  rename: [from: string, to: string][];
  replace: [string, Template][];
  add: [string, Template][];
  append: [string, Template][];
}

type Section = { headers?: string[] } | undefined;

export function compileHeaderVerbs(
  c: { remove?: Section; rename?: Section; replace?: Section; add?: Section; append?: Section },
  compile: (text: string) => Template,
): HeaderVerbs | null {
  const values = (s: Section) =>
    (s?.headers ?? []).map((e) => {
      const [name, value] = splitPair(e);
      const t = compile(value);
      // Checked by the schema already; again here so a table that skipped validation still cannot inject a header.
      if (!name || t.parts.some((p) => typeof p === 'string' && !HEADER_VALUE.test(p)))
        throw new Error(`transformer: unsafe header entry ${JSON.stringify(e)}`);
      return [name.toLowerCase(), t] as [string, Template];
    });
  const v: HeaderVerbs = {
    remove: (c.remove?.headers ?? []).map((h) => h.toLowerCase()),
    rename: (c.rename?.headers ?? []).map(
      (e) => splitPair(e).map((n) => n.toLowerCase()) as [string, string],
    ),
    replace: values(c.replace),
    add: values(c.add),
    append: values(c.append),
  };
  const n = v.remove.length + v.rename.length + v.replace.length + v.add.length + v.append.length;
  return n ? v : null;
}

/** Applies the verbs; returns the name of the first header whose value was refused (that one is not set), or null. */
export function applyHeaderVerbs(v: HeaderVerbs, h: Headers, sources: Sources): string | null {
  let refused: string | null = null;
  for (const name of v.remove) delete h[name];
  for (const [from, to] of v.rename) {
    const value = h[from];
    if (value !== undefined) {
      delete h[from];
      h[to] = value;
    }
  }
  for (const [name, t] of v.replace) {
    if (h[name] === undefined) continue;
    const value = t.literal ?? render(t, sources, headerValue);
    if (value === null) refused ??= name;
    else h[name] = value;
  }
  for (const [name, t] of v.add) {
    if (h[name] !== undefined) continue;
    const value = t.literal ?? render(t, sources, headerValue);
    if (value === null) refused ??= name;
    else h[name] = value;
  }
  for (const [name, t] of v.append) {
    const value = t.literal ?? render(t, sources, headerValue);
    if (value === null) {
      refused ??= name;
      continue;
    }
    const old = h[name];
    h[name] =
      old === undefined
        ? value
        : Array.isArray(old)
          ? [...old, value]
          : name === 'set-cookie'
            ? [old, value]
            : `${old}, ${value}`;
  }
  return refused;
}
