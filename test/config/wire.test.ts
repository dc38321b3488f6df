/**
 * The snapshot on the wire (dataplane/config/wire.ts): the controller sends the table's canonical
 * text it hashed; a data plane checks the hash on the text as it arrived, and anything else (a
 * hand-written snapshot, a tampered table) the long way, with the same verdicts.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { tableHash } from '../../dataplane/config/wire.ts';
import type { RouteTable } from '../../dataplane/config/route-table.ts';
import { validateSnapshot } from '../../dataplane/config/validate.ts';
import {
  arrivedAs,
  arrivedTableHashes,
  hashedSnapshot,
  packTable,
  snapshotBody,
  unpackTable,
} from '../../dataplane/config/wire.ts';
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
    const parsed = JSON.parse(text);
    expect(unpackTable(parsed.table)).toEqual([]);
    expect(parsed).toEqual({ hash: s.hash, table: table() });
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

  describe('packed: each plugin instance once, routes naming theirs by index', () => {
    // 3 routes: two share one instance object, the third has an equal copy of it and another.
    const shared = transformer('t', { add: { headers: ['X-A:1'] } });
    const other = transformer('o', { add: { headers: ['X-B:2'] } });
    const many = (): RouteTable => ({
      version: 1,
      routes: [
        route('a', 'u', '/a', { plugins: [shared] }),
        route('b', 'u', '/b', { plugins: [shared] }),
        route('c', 'u', '/c', { plugins: [structuredClone(other), structuredClone(shared)] }),
        route('d', 'u', '/d'),
      ],
      upstreams: [upstream('u', 'http://127.0.0.1:9')],
    });

    it('the text holds each distinct instance once, in order of first use; the hash is over it', () => {
      const s = hashedSnapshot(many());
      const text = snapshotBody(s).toString('utf8');
      const sent = JSON.parse(text).table;
      expect(sent.plugins).toEqual([shared, other]);
      expect(sent.routes.map((r: { plugins: unknown }) => r.plugins)).toEqual([[0], [0], [1, 0], []]);
      expect(text.split('X-A:1').length - 1).toBe(1);
      expect(s.hash).toBe(sha(text.slice(`{"hash":"${s.hash}","table":`.length, -1)));
      // Packing does not touch the table it packs.
      expect(s.table).toEqual(many());
    });

    it('a table without plugins is sent as it is', () => {
      const t: RouteTable = { ...many(), routes: [route('d', 'u', '/d')] };
      expect(packTable(t)).toBe(t);
      expect(JSON.parse(snapshotBody(hashedSnapshot(t)).toString('utf8')).table).not.toHaveProperty(
        'plugins',
      );
    });

    it('arrived packed, it is valid, unpacked to the table sent, its routes sharing one instance', () => {
      const body = arrive(snapshotBody(hashedSnapshot(many())).toString('utf8'));
      expect(validateSnapshot(body)).toEqual([]);
      expect(body.table).toEqual(many());
      expect(body.table.routes[0].plugins[0]).toBe(body.table.routes[2].plugins[1]);
    });

    it('packed and written another way (not canonical), its hash is checked the long way', () => {
      const s = { hash: tableHash(many()), table: packTable(many()) };
      const body = arrive(JSON.stringify(s, null, 1));
      expect(validateSnapshot(body)).toEqual([]);
      const tampered = arrive(JSON.stringify({ ...s, table: { ...s.table, plugins: [other, shared] } }));
      expect(validateSnapshot(tampered)).toEqual([
        { field: 'hash', message: 'does not match the sha256 of the canonical JSON of table' },
      ]);
    });

    it('an index out of range, or plugins not a list, is refused naming the route and entry', () => {
      const packed = structuredClone(packTable(many())) as {
        routes: { plugins: unknown[] }[];
        plugins: unknown;
      };
      packed.routes[2].plugins[0] = 2;
      packed.routes[1].plugins[0] = 0.5;
      expect(validateSnapshot({ hash: 'a'.repeat(64), table: packed })).toEqual([
        {
          id: 'route/test/b/b/0',
          field: 'plugins[0]',
          message: "0.5 is not an index of the table's 2 plugins",
        },
        {
          id: 'route/test/c/c/0',
          field: 'plugins[0]',
          message: "2 is not an index of the table's 2 plugins",
        },
      ]);
      expect(
        validateSnapshot({ hash: 'a'.repeat(64), table: { ...packTable(many()), plugins: {} } }),
      ).toEqual([{ field: 'plugins', message: 'must be an array of plugin instances' }]);
    });

    it('a shared instance with a wrong config is reported on every route that uses it', () => {
      const bad = transformer('bad', { add: { headers: 'not a list' } });
      const t: RouteTable = {
        ...many(),
        routes: [
          route('a', 'u', '/a', { plugins: [bad] }),
          route('b', 'u', '/b', { plugins: [shared, bad] }),
        ],
      };
      const body = arrive(snapshotBody(hashedSnapshot(t)).toString('utf8'));
      const errors = validateSnapshot(body);
      expect(errors.map((e) => [e.id, e.field])).toEqual([
        ['route/test/a/a/0', 'plugins[0].config.add.headers'],
        ['route/test/b/b/0', 'plugins[1].config.add.headers'],
      ]);
      expect(errors[0].message).toBe(errors[1].message);
    });

    it('an instance inline next to indexes is still read (a hand-written table)', () => {
      const t = structuredClone(packTable(many())) as { routes: { plugins: unknown[] }[] };
      t.routes[3].plugins = [transformer('k', {})];
      const unpacked = structuredClone(t);
      expect(unpackTable(unpacked)).toEqual([]);
      expect((unpacked as unknown as RouteTable).routes[3].plugins).toEqual([transformer('k', {})]);
      expect((unpacked as unknown as RouteTable).routes[2].plugins).toEqual([other, shared]);
    });
  });
});
