/**
 * Query verbs on the raw query string, in Kong's order: remove, rename, replace (only when
 * present), add (only when absent), append. Parameters the config does not name keep their
 * bytes as the client sent them; names compare form-decoded; values the config sets are
 * percent-encoded whole, literals and looked-up parts alike, so no "&", "=" or "#" becomes syntax.
 */
import { queryValue, render, type Sources, type Template } from '../../config/template.ts';
import { splitPair } from '../../config/transform-schema.ts';

export interface QueryVerbs {
  remove: ReadonlySet<string>;
  rename: [from: string, to: string][];
  replace: [string, Template][];
  add: [string, Template][];
  append: [string, Template][];
}

type Section = { query?: string[] } | undefined;

/** A template whose literal parts are percent-encoded once, here, like the values it looks up per request. */
const encodedLiterals = (t: Template): Template => {
  const parts = t.parts.map((p) => (typeof p === 'string' ? encodeURIComponent(p) : p));
  return { parts, literal: t.literal === null ? null : encodeURIComponent(t.literal) };
};

export function compileQueryVerbs(
  c: { remove?: Section; rename?: Section; replace?: Section; add?: Section; append?: Section },
  compile: (text: string) => Template,
): QueryVerbs | null {
  const values = (s: Section) =>
    (s?.query ?? []).map((e) => {
      const [name, value] = splitPair(e);
      return [name, encodedLiterals(compile(value))] as [string, Template];
    });
  const v: QueryVerbs = {
    remove: new Set(c.remove?.query ?? []),
    rename: (c.rename?.query ?? []).map((e) => splitPair(e)),
    replace: values(c.replace),
    add: values(c.add),
    append: values(c.append),
  };
  const n = v.remove.size + v.rename.length + v.replace.length + v.add.length + v.append.length;
  return n ? v : null;
}

interface Param {
  name: string;
  /** "name=value" as sent (or as set). */
  raw: string;
}

function decodeName(raw: string): string {
  const eq = raw.indexOf('=');
  const name = (eq === -1 ? raw : raw.slice(0, eq)).replaceAll('+', ' ');
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

export function applyQueryVerbs(v: QueryVerbs, query: string, sources: Sources): string {
  let params: Param[] = [];
  for (const raw of query.split('&')) if (raw !== '') params.push({ name: decodeName(raw), raw });
  if (v.remove.size) params = params.filter((p) => !v.remove.has(p.name));
  for (const [from, to] of v.rename) {
    for (const p of params) {
      if (p.name !== from) continue;
      const eq = p.raw.indexOf('=');
      p.name = to;
      p.raw = eq === -1 ? to : to + p.raw.slice(eq);
    }
  }
  const present = (name: string) => params.some((p) => p.name === name);
  const set = (name: string, t: Template) => ({ name, raw: `${name}=${render(t, sources, queryValue)}` });
  for (const [name, t] of v.replace) {
    const at = params.findIndex((p) => p.name === name);
    if (at === -1) continue;
    const value = set(name, t);
    params = params.flatMap((p, i) => (i === at ? [value] : p.name === name ? [] : [p]));
  }
  for (const [name, t] of v.add) if (!present(name)) params.push(set(name, t));
  for (const [name, t] of v.append) params.push(set(name, t));
  return params.map((p) => p.raw).join('&');
}
