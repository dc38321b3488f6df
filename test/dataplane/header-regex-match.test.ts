/**
 * Header matches by regular expression, one definition from the GatewayRoute to the router: a
 * GatewayRoute rule's `headers[].type: RegularExpression` compiles into the route table's header
 * match, which the router tests whole (anchored) against the request's header; a pattern that
 * does not compile or could backtrack catastrophically is refused by the controller (naming the
 * field) and at the data plane's door (naming the table field).
 */
import { describe, expect, it } from 'vitest';
import { build } from '../../controller/build.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';
import { validateRouteTable } from '../../dataplane/config/validate.ts';
import { RouteMatcher } from '../../dataplane/runtime/router.ts';
import { gatewayRoute } from '../helpers/fixtures.ts';
import { route, routeMatcherInput, snapshot, upstream } from '../helpers/tables.ts';

describe('header regex matches', () => {
  it('a GatewayRoute rule compiles to a RegularExpression header match, ranked before the plain rule', () => {
    const r = build(
      resourceSetFrom([
        gatewayRoute('web')
          .url('http://127.0.4.1:8080')
          .route('beta', ['/api'], {
            headers: [{ name: 'X-Version', type: 'RegularExpression', value: 'v2[0-9]*' }],
          })
          .route('plain', ['/api'])
          .build(),
      ]),
    );
    expect(r.diagnostics).toEqual([]);
    const [first, second] = r.snapshot.table.routes;
    expect(first.id).toBe('route/default/web/beta/0');
    expect(first.match.headers).toEqual([
      { name: 'x-version', type: 'RegularExpression', value: 'v2[0-9]*' },
    ]);
    expect(second.id).toBe('route/default/web/plain/0');
  });

  it('a pattern that could backtrack catastrophically is refused, naming the field', () => {
    const r = build(
      resourceSetFrom([
        gatewayRoute('web')
          .url('http://127.0.4.1:8080')
          .route('bad', ['/api'], { headers: [{ name: 'x-v', type: 'RegularExpression', value: '(a+)+' }] })
          .build(),
      ]),
    );
    expect(r.snapshot.table.routes).toEqual([]);
    expect(JSON.stringify(r.status['GatewayRoute/default/web'])).toContain(
      'spec.routes[0].headers[0].value: could backtrack catastrophically',
    );
  });

  it('the router matches the whole value, case-sensitively; an absent header never matches', () => {
    const entries = [
      route('v2', 'u', '/api', {
        match: {
          path: { type: 'Prefix', value: '/api' },
          headers: [{ name: 'x-version', type: 'RegularExpression', value: 'v2[0-9]*' }],
        },
      }),
      route('plain', 'u', '/api'),
    ];
    const m = new RouteMatcher(entries.map((e) => routeMatcherInput(e)));
    const at = (headers: Record<string, string>) =>
      m.match('/api/x', 'GET', 'example.com', headers)?.entry.source.name;
    expect(at({ 'x-version': 'v2' })).toBe('v2');
    expect(at({ 'x-version': 'v21' })).toBe('v2');
    expect(at({ 'x-version': 'V2' })).toBe('plain');
    expect(at({ 'x-version': 'xv2' })).toBe('plain');
    expect(at({})).toBe('plain');
  });

  it('the door refuses a table whose header pattern does not compile or could backtrack', () => {
    const table = snapshot(
      [
        route('a', 'u', '/a', {
          match: {
            path: { type: 'Prefix', value: '/a' },
            headers: [{ name: 'x', type: 'RegularExpression', value: '(' }],
          },
        }),
        route('b', 'u', '/b', {
          match: {
            path: { type: 'Prefix', value: '/b' },
            headers: [{ name: 'x', type: 'RegularExpression', value: '(a*)*' }],
          },
        }),
      ],
      [upstream('u', 'http://127.0.4.1:1')],
    ).table;
    expect(validateRouteTable(table)).toEqual([
      expect.objectContaining({
        field: 'match.headers[0].value',
        message: expect.stringContaining('is not a valid regular expression'),
      }),
      expect.objectContaining({
        field: 'match.headers[0].value',
        message: expect.stringContaining('could backtrack catastrophically'),
      }),
    ]);
  });
});
