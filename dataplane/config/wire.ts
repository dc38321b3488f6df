/**
 * A snapshot on the wire (PUT /config): `{"hash":"<sha256 hex>","table":<the packed table's
 * canonical JSON>}`, the hash being the sha256 of exactly that table text.
 *
 * Why this shape: the controller writes the canonical text to hash it anyway, so it sends that
 * text instead of serializing the table a second time; and a data plane checks the hash over the
 * table's text as it arrived (one sha256) instead of canonicalizing the parsed table again (a
 * sorted copy of the whole table, then its text: at 5,000 routes ~100 ms and ~40 MB of garbage
 * per push). A body of another shape (written by hand, or by an older controller) is checked the
 * long way and works the same.
 *
 * Packed: each distinct plugin instance is written once, in `table.plugins` (in the order routes
 * first use them), and a route names its instances by their index there. 5,000 routes sharing
 * one key-auth plugin were 7.2 MB of JSON, 4 MB of it the same plugin 10,000 times; the text,
 * the push body and the data plane's parse of it are what the controller and the data planes
 * peak on. A route may still carry an instance inline (hand-written tables do): unpackTable
 * accepts both.
 */
import type { TableError } from './config-problem.ts';
import type { PluginInstance, Route, RouteTable, Snapshot } from './route-table.ts';
import { canonicalJson, sha256Hex } from './canonical-json.ts';

/** Canonical texts of tables just built, until their snapshot is encoded (snapshotBody). */
const canonicalTexts = new WeakMap<RouteTable, string>();

/** A route table as hashed and sent: routes name their plugin instances by index in `plugins`. */
export type PackedRouteTable = Omit<RouteTable, 'routes'> & {
  routes: (Omit<Route, 'plugins'> & { plugins: (number | PluginInstance)[] })[];
  plugins?: PluginInstance[];
};

/**
 * The table packed: each distinct instance once (the same object, or the same canonical JSON),
 * in order of first use; routes name them by index. A table without plugins is unchanged.
 */
export function packTable(table: RouteTable): PackedRouteTable {
  const plugins: PluginInstance[] = [];
  // Optimization: a compiled table shares one object per instance, so identity finds nearly all
  // repeats; canonical JSON (once per distinct object) finds equal copies.
  const byObject = new Map<PluginInstance, number>();
  const byText = new Map<string, number>();
  const indexOf = (p: PluginInstance): number => {
    let i = byObject.get(p);
    if (i !== undefined) return i;
    const text = canonicalJson(p);
    i = byText.get(text);
    if (i === undefined) {
      i = plugins.push(p) - 1;
      byText.set(text, i);
    }
    byObject.set(p, i);
    return i;
  };
  const routes = table.routes.map((r) => (r.plugins.length ? { ...r, plugins: r.plugins.map(indexOf) } : r));
  return plugins.length ? { ...table, plugins, routes } : table;
}

/**
 * A parsed table unpacked in place: each index in a route's plugins replaced by that instance of
 * `table.plugins` (one object, shared), and `plugins` removed, so what follows sees a RouteTable.
 * Errors name the route and the entry; anything else is left for the schema to judge.
 */
export function unpackTable(table: unknown): TableError[] {
  if (table === null || typeof table !== 'object' || !('plugins' in table)) return [];
  const t = table as { plugins: unknown; routes?: unknown };
  const plugins = t.plugins;
  if (!Array.isArray(plugins)) return [{ field: 'plugins', message: 'must be an array of plugin instances' }];
  const errors: TableError[] = [];
  if (Array.isArray(t.routes))
    for (const [i, r] of t.routes.entries()) {
      const list = (r as { plugins?: unknown } | null)?.plugins;
      if (!Array.isArray(list)) continue;
      list.forEach((p, j) => {
        if (typeof p !== 'number') return;
        if (Number.isInteger(p) && p >= 0 && p < plugins.length) list[j] = plugins[p];
        else {
          const id = (r as { id?: unknown }).id;
          errors.push({
            id: typeof id === 'string' ? id : `routes[${i}]`,
            field: `plugins[${j}]`,
            message: `${p} is not an index of the table's ${plugins.length} plugins`,
          });
        }
      });
    }
  delete t.plugins;
  return errors;
}

/** The hash a snapshot of this table carries: the sha256 of its packed table's canonical JSON. */
export function tableHash(table: RouteTable): string {
  return sha256Hex(canonicalJson(packTable(table)));
}

/** A table and its hash, its canonical (packed) text kept for snapshotBody. */
export function hashedSnapshot(table: RouteTable): Snapshot {
  const text = canonicalJson(packTable(table));
  canonicalTexts.set(table, text);
  return { hash: sha256Hex(text), table };
}

const HEAD = '{"hash":"';
const MIDDLE = '","table":';

/** The bytes of a push: the envelope around the table's canonical text (computed if not kept). */
export function snapshotBody(snapshot: Snapshot): Buffer {
  const text = canonicalTexts.get(snapshot.table) ?? canonicalJson(packTable(snapshot.table));
  canonicalTexts.delete(snapshot.table); // one push body per build: the text need not outlive it
  const head = `${HEAD}${snapshot.hash}${MIDDLE}`;
  const size = head.length + Buffer.byteLength(text) + 1;
  const body = Buffer.allocUnsafe(size);
  let at = body.write(head, 0, 'latin1');
  at += body.write(text, at, 'utf8');
  body.write('}', at, 'latin1');
  return body;
}

/** JSON texts of parsed request bodies (PUT /config), by the value parsed. */
const arrived = new WeakMap<object, string>();

/** Remembers the text a body was parsed from (the admin server's JSON parser). */
export function arrivedAs(body: object, text: string): void {
  arrived.set(body, text);
}

/** The text a body was parsed from, if it came over PUT /config; forgotten once read. */
export function takeArrivedText(body: object): string | undefined {
  const text = arrived.get(body);
  arrived.delete(body);
  return text;
}

/** The text a body was parsed from, if it came over PUT /config (kept). */
export function arrivedText(body: object): string | undefined {
  return arrived.get(body);
}

/**
 * True when a snapshot arrived in the wire shape and its hash is the sha256 of its table's text
 * as it arrived. False proves nothing (another shape, or a table not written canonically: a
 * hand-written snapshot); the hash is then checked on the parsed table.
 */
export function arrivedTableHashes(snapshot: Snapshot): boolean {
  const text = arrivedText(snapshot);
  const head = `${HEAD}${snapshot.hash}${MIDDLE}`;
  if (text === undefined || !text.startsWith(head) || !text.endsWith('}')) return false;
  return sha256Hex(text.slice(head.length, -1)) === snapshot.hash;
}
