/**
 * The snapshot on the wire (dataplane/config/wire.ts): the controller sends the table's canonical
 * text it hashed; a data plane checks the hash on the text as it arrived, and anything else (a
 * hand-written snapshot, a tampered table) the long way, with the same verdicts.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { tableHash } from '../../dataplane/config/canonical-json.ts';
import type { RouteTable } from '../../dataplane/config/route-table.ts';
import { validateSnapshot } from '../../dataplane/config/validate.ts';
import { arrivedAs, arrivedTableHashes, hashedSnapshot, snapshotBody } from '../../dataplane/config/wire.ts';
import { route, transformer, upstream } from '../helpers/tables.ts';

const table = (): RouteTable => ({
  version: 1,
  // Keys in no particular order, and text beyond ASCII: the canonical text sorts and keeps both.
  routes: [route('a', 'u', '/a', { plugins: [transformer('t', { add: { headers: ['X-Note:café'] } })] })],
  upstreams: [upstream('u', 'http://127.0.0.1:9')],
});
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

/** As the admin server's parser leaves a body: parsed, with the text it came as. */
function arrive(text: string) {
  const body = JSON.parse(text);
  arrivedAs(body, text);
  return body;
}

describe('snapshot wire format', () => {
  it('a pushed body is the envelope around the canonical table text its hash is the sha256 of', () => {
    const s = hashedSnapshot(table());
    const text = snapshotBody(s).toString('utf8');
    const head = `{"hash":"${s.hash}","table":`;
    expect(text.startsWith(head) && text.endsWith('}')).toBe(true);
    expect(sha(text.slice(head.length, -1))).toBe(s.hash);
    expect(s.hash).toBe(tableHash(table()));
    expect(JSON.parse(text)).toEqual({ hash: s.hash, table: table() });
    // Encoded again without the kept text (a second push of the same snapshot): the same bytes.
    expect(snapshotBody(s).toString('utf8')).toBe(text);
  });

  it('arrived in that shape: the hash is checked on its text, and it is valid', () => {
    const body = arrive(snapshotBody(hashedSnapshot(table())).toString('utf8'));
    expect(arrivedTableHashes(body)).toBe(true);
    expect(validateSnapshot(body)).toEqual([]);
  });

  it('a table changed under its hash is refused, in that shape too', () => {
    const s = hashedSnapshot(table());
    const text = snapshotBody(s).toString('utf8').replace('"/a"', '"/b"');
    const body = arrive(text);
    expect(arrivedTableHashes(body)).toBe(false);
    expect(validateSnapshot(body)).toEqual([
      { field: 'hash', message: 'does not match the sha256 of the canonical JSON of table' },
    ]);
  });

  it('a snapshot written another way (keys unsorted, spaces) is checked the long way and accepted', () => {
    const s = { hash: tableHash(table()), table: table() };
    for (const text of [JSON.stringify(s), JSON.stringify(s, null, 2)]) {
      const body = arrive(text);
      expect(arrivedTableHashes(body)).toBe(false);
      expect(validateSnapshot(body)).toEqual([]);
    }
  });
});
