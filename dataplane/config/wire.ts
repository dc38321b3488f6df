/**
 * A snapshot on the wire (PUT /config): `{"hash":"<sha256 hex>","table":<the table's canonical
 * JSON>}`, the hash being the sha256 of exactly that table text.
 *
 * Why this shape: the controller writes the canonical text to hash it anyway, so it sends that
 * text instead of serializing the table a second time; and a data plane checks the hash over the
 * table's text as it arrived (one sha256) instead of canonicalizing the parsed table again (a
 * sorted copy of the whole table, then its text: at 5,000 routes ~100 ms and ~40 MB of garbage
 * per push). A body of another shape (written by hand, or by an older controller) is checked the
 * long way and works the same.
 */
import type { RouteTable, Snapshot } from './route-table.ts';
import { canonicalJson, sha256Hex } from './canonical-json.ts';

/** Canonical texts of tables just built, until their snapshot is encoded (snapshotBody). */
const canonicalTexts = new WeakMap<RouteTable, string>();

/** A table and its hash, its canonical text kept for snapshotBody. */
export function hashedSnapshot(table: RouteTable): Snapshot {
  const text = canonicalJson(table);
  canonicalTexts.set(table, text);
  return { hash: sha256Hex(text), table };
}

const HEAD = '{"hash":"';
const MIDDLE = '","table":';

/** The bytes of a push: the envelope around the table's canonical text (computed if not kept). */
export function snapshotBody(snapshot: Snapshot): Buffer {
  const text = canonicalTexts.get(snapshot.table) ?? canonicalJson(snapshot.table);
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
