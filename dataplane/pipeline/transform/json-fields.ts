/**
 * Edits of JSON body fields by dotted path ("a.b.c"): objects only, arrays and scalars on the
 * way are left alone (the verb does nothing there). Values are set through the object model,
 * as own properties (a field named "__proto__" is a field, never the prototype), so nothing a
 * value holds can become JSON structure.
 */
import { type Template, render, type Sources, jsonString } from '../../config/template.ts';
import { splitPair } from '../../config/transform-schema.ts';

type Obj = Record<string, unknown>;
type Path = readonly string[];

const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

const setOwn = (o: Obj, key: string, value: unknown) =>
  Object.defineProperty(o, key, { value, writable: true, enumerable: true, configurable: true });

/** The object holding the path's last name, or null; `create` makes missing objects on the way. */
function parentOf(root: Obj, path: Path, create: boolean): Obj | null {
  let o = root;
  for (let i = 0; i < path.length - 1; i++) {
    const k = path[i];
    if (!Object.hasOwn(o, k)) {
      if (!create) return null;
      setOwn(o, k, {});
    }
    const next = o[k];
    if (!isObject(next)) return null;
    o = next;
  }
  return o;
}

const has = (root: Obj, path: Path) => {
  const p = parentOf(root, path, false);
  return p !== null && Object.hasOwn(p, path[path.length - 1]);
};

export interface FieldVerbs {
  remove: Path[];
  rename: [from: Path, to: Path][];
  replace: [Path, Template][];
  add: [Path, Template][];
}

const split = (p: string): Path => p.split('.');

export function compileFieldVerbs(
  c: { remove?: string[]; rename?: string[]; replace?: string[]; add?: string[] },
  compile: (text: string) => Template,
): FieldVerbs | null {
  const v: FieldVerbs = {
    remove: (c.remove ?? []).map(split),
    rename: (c.rename ?? []).map((e) => splitPair(e).map(split) as [Path, Path]),
    replace: (c.replace ?? []).map((e) => [split(splitPair(e)[0]), compile(splitPair(e)[1])]),
    add: (c.add ?? []).map((e) => [split(splitPair(e)[0]), compile(splitPair(e)[1])]),
  };
  return v.remove.length + v.rename.length + v.replace.length + v.add.length ? v : null;
}

/** Applies remove, rename, replace (only when present), add (only when absent) to a parsed body. */
export function applyFieldVerbs(v: FieldVerbs, root: Obj, sources: Sources): void {
  for (const path of v.remove) {
    const p = parentOf(root, path, false);
    if (p !== null) delete p[path[path.length - 1]];
  }
  for (const [from, to] of v.rename) {
    if (!has(root, from)) continue;
    const p = parentOf(root, from, false)!;
    const name = from[from.length - 1];
    const value = p[name];
    const target = parentOf(root, to, true);
    if (target === null) continue;
    delete p[name];
    setOwn(target, to[to.length - 1], value);
  }
  for (const [path, t] of v.replace) {
    if (has(root, path))
      setOwn(parentOf(root, path, false)!, path[path.length - 1], render(t, sources, jsonString));
  }
  for (const [path, t] of v.add) {
    if (has(root, path)) continue;
    const p = parentOf(root, path, true);
    if (p !== null) setOwn(p, path[path.length - 1], render(t, sources, jsonString));
  }
}

/** Whether a Content-Type is JSON (application/json or any +json type). */
export function isJsonType(type: string | string[] | undefined): boolean {
  if (typeof type !== 'string') return false;
  const semi = type.indexOf(';');
  const t = (semi === -1 ? type : type.slice(0, semi)).trim().toLowerCase();
  return t === 'application/json' || (t.startsWith('application/') && t.endsWith('+json'));
}

export type SkipReason = 'not_json' | 'invalid_json' | 'not_object' | 'too_large' | 'encoded';

/** Parses a JSON object body, or says why it passes untouched. */
export function parseObject(body: Buffer): Obj | SkipReason {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return 'invalid_json';
  }
  return isObject(parsed) ? parsed : 'not_object';
}
