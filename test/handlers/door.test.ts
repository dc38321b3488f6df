/**
 * The door's checks (validateRouteTable) of the handler kinds Gateway API rules compile to:
 * each refused entry names its route id and the handler's field, and says why.
 */
import { describe, expect, it } from 'vitest';
import type { Route } from '../../dataplane/config/route-table.ts';
import { validateRouteTable } from '../../dataplane/config/validate.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

const ID = 'route/test/r/r/0';
/** The errors of a table whose one route carries `handler` (its match: a Prefix "/r" unless `exact`). */
const errorsOf = (handler: unknown, exact = false) =>
  validateRouteTable(
    snapshot(
      [
        {
          ...route('r', 'u', '/r', { type: exact ? 'Exact' : 'Prefix' }),
          handler: handler as Route['handler'],
        },
      ],
      [upstream('u', 'http://127.0.0.1:9'), upstream('v', 'http://127.0.0.1:10')],
    ).table,
  );

describe('redirect at the door', () => {
  it('accepts every field the Gateway API filter has', () => {
    expect(
      errorsOf({
        type: 'redirect',
        statusCode: 308,
        scheme: 'https',
        hostname: 'www.example.org',
        port: 8443,
        path: { type: 'ReplacePrefixMatch', value: '/new/' },
      }),
    ).toEqual([]);
    expect(
      errorsOf({ type: 'redirect', statusCode: 301, path: { type: 'ReplaceFullPath', value: '/' } }, true),
    ).toEqual([]);
  });

  it('refuses a status, scheme or port out of range, naming the field', () => {
    expect(errorsOf({ type: 'redirect', statusCode: 300 })).toEqual([
      expect.objectContaining({ id: ID, field: 'handler.statusCode' }),
    ]);
    expect(errorsOf({ type: 'redirect', statusCode: 302, scheme: 'ftp' })).toEqual([
      expect.objectContaining({ id: ID, field: 'handler.scheme' }),
    ]);
    expect(errorsOf({ type: 'redirect', statusCode: 302, port: 0 })).toEqual([
      expect.objectContaining({ id: ID, field: 'handler.port' }),
    ]);
  });

  it.each(['Example.org', 'exa mple.org', '-a.org', 'a..org', '*.example.org', 'a.org:80'])(
    'refuses the hostname %j',
    (hostname) => {
      expect(errorsOf({ type: 'redirect', statusCode: 302, hostname })).toEqual([
        {
          id: ID,
          field: 'handler.hostname',
          message: `not a lower-case host name: ${JSON.stringify(hostname)}`,
        },
      ]);
    },
  );

  it.each(['new', '/a/../b', '/a//b', '/a b', '/a?b', '/%7euser'])('refuses the path value %j', (value) => {
    expect(errorsOf({ type: 'redirect', statusCode: 302, path: { type: 'ReplaceFullPath', value } })).toEqual(
      [
        {
          id: ID,
          field: 'handler.path.value',
          message: `${JSON.stringify(value)} is not a normalized path (starting with "/", no dot segments, no "//", pchar only)`,
        },
      ],
    );
  });

  it('refuses ReplacePrefixMatch on a route whose match is Exact (there is no prefix to replace)', () => {
    expect(
      errorsOf(
        { type: 'redirect', statusCode: 302, path: { type: 'ReplacePrefixMatch', value: '/x' } },
        true,
      ),
    ).toEqual([
      {
        id: ID,
        field: 'handler.path.type',
        message: 'ReplacePrefixMatch needs a route with a Prefix path match',
      },
    ]);
  });
});

describe('respond at the door', () => {
  it('accepts a status alone, and a problem with its own status', () => {
    expect(errorsOf({ type: 'respond', status: 204 })).toEqual([]);
    expect(errorsOf({ type: 'respond', status: 500, problem: 'SLC_ERR_BACKEND_INVALID' })).toEqual([]);
  });

  it('refuses a status outside 200–599 and a problem whose status is not the one given', () => {
    for (const status of [199, 600, 1.5])
      expect(errorsOf({ type: 'respond', status })).toEqual([
        expect.objectContaining({ id: ID, field: 'handler.status' }),
      ]);
    expect(errorsOf({ type: 'respond', status: 503, problem: 'SLC_ERR_BACKEND_INVALID' })).toEqual([
      { id: ID, field: 'handler.status', message: 'must be 500, the status of SLC_ERR_BACKEND_INVALID' },
    ]);
  });

  it('refuses a problem a route may not answer with (an error of another kind, or none at all)', () => {
    for (const problem of ['SLC_ERR_RATE_LIMITED', 'SLC_ERR_NOPE'])
      expect(errorsOf({ type: 'respond', status: 500, problem })).toEqual([
        expect.objectContaining({ id: ID, field: 'handler.problem' }),
      ]);
  });
});

describe('proxy backends at the door', () => {
  const backends = (...weights: number[]) =>
    weights.map((weight, i) => ({ upstream: i % 2 ? 'v' : 'u', weight }));

  it('accepts weighted backends (a weight of 0 among them, an upstream named twice), and upstream alone', () => {
    expect(errorsOf({ type: 'proxy', backends: backends(70, 30, 0) })).toEqual([]);
    expect(errorsOf({ type: 'proxy', upstream: 'u' })).toEqual([]);
  });

  it('names an unknown upstream by its backend', () => {
    expect(
      errorsOf({
        type: 'proxy',
        backends: [
          { upstream: 'u', weight: 1 },
          { upstream: 'nope', weight: 1 },
        ],
      }),
    ).toEqual([{ id: ID, field: 'handler.backends[1].upstream', message: 'unknown upstream nope' }]);
  });

  it('takes a backend with a problem instead of an upstream, never both or neither', () => {
    expect(
      errorsOf({
        type: 'proxy',
        backends: [
          { upstream: 'u', weight: 1 },
          { problem: 'SLC_ERR_BACKEND_INVALID', weight: 1 },
        ],
      }),
    ).toEqual([]);
    expect(
      errorsOf({
        type: 'proxy',
        backends: [{ upstream: 'u', problem: 'SLC_ERR_BACKEND_INVALID', weight: 1 }, { weight: 1 }],
      }),
    ).toEqual([
      { id: ID, field: 'handler.backends[0]', message: 'needs exactly one of upstream and problem' },
      { id: ID, field: 'handler.backends[1]', message: 'needs exactly one of upstream and problem' },
    ]);
  });

  it('wants exactly one of upstream and backends, and a canary only beside upstream', () => {
    expect(errorsOf({ type: 'proxy' })).toEqual([
      { id: ID, field: 'handler', message: 'needs upstream or backends' },
    ]);
    expect(errorsOf({ type: 'proxy', upstream: 'u', backends: backends(1) })).toEqual([
      { id: ID, field: 'handler.backends', message: 'upstream and backends exclude each other: give one' },
    ]);
    expect(
      errorsOf({ type: 'proxy', backends: backends(1, 1), canary: { upstream: 'v', weight: 10 } }),
    ).toEqual([
      {
        id: ID,
        field: 'handler.canary',
        message: 'a canary goes with upstream only: backends carry their own weights',
      },
    ]);
  });

  it('wants a weight above 0 somewhere, integer weights from 0 to 1,000,000, and 1 to 16 backends', () => {
    expect(errorsOf({ type: 'proxy', backends: backends(0, 0) })).toEqual([
      { id: ID, field: 'handler.backends', message: 'at least one backend needs a weight above 0' },
    ]);
    for (const weight of [-1, 0.5, 1_000_001])
      expect(errorsOf({ type: 'proxy', backends: backends(1, weight) })).toEqual([
        expect.objectContaining({ id: ID, field: 'handler.backends[1].weight' }),
      ]);
    expect(errorsOf({ type: 'proxy', backends: [] })).toEqual([
      expect.objectContaining({ id: ID, field: 'handler.backends' }),
    ]);
    expect(errorsOf({ type: 'proxy', backends: backends(...new Array(17).fill(1)) })).toEqual([
      expect.objectContaining({ id: ID, field: 'handler.backends' }),
    ]);
  });
});
