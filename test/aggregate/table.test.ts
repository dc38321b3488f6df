/**
 * An aggregate entry at the data plane's door (validateRouteTable): a shape error names the
 * field inside the entry (not just "handler"), the door's own checks run (call paths over
 * declared parameters, unique names), and every call's upstream must exist.
 */
import { describe, expect, it } from 'vitest';
import type { Route } from '../../dataplane/config/route-table.ts';
import { validateRouteTable } from '../../dataplane/config/validate.ts';
import { route, upstream } from '../helpers/tables.ts';

const call = (name: string, path: string, extra: Record<string, unknown> = {}) => ({
  name,
  upstream: 'u',
  method: 'GET',
  path,
  timeoutMs: 1000,
  required: true,
  ...extra,
});
const withHandler = (handler: unknown): Route => ({
  ...route('a', 'u', '/a'),
  handler: handler as Route['handler'],
});
const table = (r: Route) => ({ version: 1, routes: [r], upstreams: [upstream('u', 'http://127.0.0.1:1')] });

describe('validateRouteTable, aggregate entries', () => {
  it('names the field of a shape error inside the entry', () => {
    const errors = validateRouteTable(
      table(
        withHandler({
          type: 'aggregate',
          timeoutMs: 1000,
          maxBodyBytes: 1,
          calls: [call('a', '/x', { timeoutMs: 0 })],
        }),
      ),
    );
    expect(errors.map((e) => [e.id, e.field])).toEqual([['route/test/a/a/0', 'handler.calls[0].timeoutMs']]);
  });

  it('checks call paths, names and upstreams', () => {
    const errors = validateRouteTable(
      table(
        withHandler({
          type: 'aggregate',
          pattern: '/a/{id}',
          timeoutMs: 1000,
          maxBodyBytes: 1,
          calls: [call('a', '/x/{{ path.other }}'), call('a', '/y', { upstream: 'missing' })],
        }),
      ),
    );
    expect(errors.map((e) => [e.field, e.message])).toEqual([
      ['handler.calls[1].upstream', 'unknown upstream missing'],
      ['handler.calls[0].path', '{{ path.other }} is not a parameter of pattern'],
      ['handler.calls[1].name', '"a" is already the name of calls[0]'],
    ]);
  });
});
