/**
 * The data plane's check at the door for the versions fields of a table (a snapshot pushed by
 * hand or by another controller version): each refusal names the route and the field.
 */
import { describe, expect, it } from 'vitest';
import type { Route } from '../../dataplane/config/route-table.ts';
import { validateRouteTable } from '../../dataplane/config/validate.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

const table = (r: Route) => snapshot([r], [upstream('u', 'http://127.0.0.1:9')]).table;
const canary = (c: Record<string, unknown>) =>
  ({ ...route('a', 'u', '/a'), handler: { type: 'proxy', upstream: 'u', canary: c } }) as Route;

describe('validateRouteTable, versions fields', () => {
  it('accepts a canary, a media-type match and a deprecation', () => {
    const r = {
      ...route('a', 'u', '/a', {
        match: { path: { type: 'Prefix', value: '/a' }, mediaType: { parameter: 'version', value: '2' } },
      }),
      handler: {
        type: 'proxy' as const,
        upstream: 'u',
        canary: { upstream: 'u', weight: 10, sticky: { consumer: true as const } },
      },
      deprecation: {
        deprecation: '@1767225600',
        sunset: 'Wed, 01 Jul 2026 00:00:00 GMT',
        goneAtMs: 1782864000000,
      },
    };
    expect(validateRouteTable(table(r))).toEqual([]);
  });

  it('a canary to an unknown upstream names handler.canary.upstream', () => {
    expect(validateRouteTable(table(canary({ upstream: 'nope', weight: 10 })))).toEqual([
      { id: 'route/test/a/a/0', field: 'handler.canary.upstream', message: 'unknown upstream nope' },
    ]);
  });

  it('a weight over 100, a sticky of no known kind and a Deprecation that is no sf-date are refused', () => {
    const errors = [
      ...validateRouteTable(table(canary({ upstream: 'u', weight: 101 }))),
      ...validateRouteTable(table(canary({ upstream: 'u', weight: 5, sticky: { ip: true } }))),
      ...validateRouteTable(table({ ...route('a', 'u', '/a'), deprecation: { deprecation: 'true' } })),
    ];
    expect(errors.map((e) => e.id)).toEqual(['route/test/a/a/0', 'route/test/a/a/0', 'route/test/a/a/0']);
    expect(errors.map((e) => e.field)).toEqual([
      'handler.canary.weight',
      'handler.canary.sticky',
      'deprecation.deprecation',
    ]);
  });
});
