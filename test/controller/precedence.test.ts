import { describe, expect, it } from 'vitest';
import type { Ranked } from '../../controller/compile/draft.ts';
import type { CompileState, Draft } from '../../controller/compile/draft.ts';
import { comparePrecedence, sortByPrecedence } from '../../controller/compile/precedence.ts';
import type { RouteMatch } from '../../dataplane/config/route-table.ts';

function ranked(
  path: string,
  extra: Partial<RouteMatch> & { type?: 'Exact' | 'Prefix' } = {},
  rest: Partial<Ranked> = {},
): Ranked {
  const { type = 'Prefix', ...match } = extra;
  return {
    match: { path: { type, value: path }, ...match },
    createdMs: undefined,
    namespace: 'default',
    name: 'r',
    routeName: 'r',
    matchIndex: 0,
    ...rest,
  };
}

/** a must sort before b, and the comparator must say so from both sides. */
function expectFirst(a: Ranked, b: Ranked) {
  expect(comparePrecedence(a, b)).toBeLessThan(0);
  expect(comparePrecedence(b, a)).toBeGreaterThan(0);
}

describe('comparePrecedence', () => {
  it('rule 1: Exact before Prefix, even a longer prefix', () => {
    expectFirst(ranked('/a', { type: 'Exact' }), ranked('/a/much/longer/prefix'));
  });

  it('rule 2: longer path first', () => {
    expectFirst(ranked('/api/v2'), ranked('/api'));
    expectFirst(ranked('/api'), ranked('/'));
  });

  it('rule 3: hosts before any host, before rules 4 and 5', () => {
    expectFirst(
      ranked('/a', { hosts: ['x.example'] }),
      ranked('/a', { headers: [{ name: 'h', value: '1' }], methods: ['GET'] }),
    );
  });

  it('rule 4: more header matches first, before rule 5', () => {
    const two = [
      { name: 'a', value: '1' },
      { name: 'b', value: '2' },
    ];
    expectFirst(ranked('/a', { headers: two }), ranked('/a', { headers: [two[0]], methods: ['GET'] }));
    expectFirst(ranked('/a', { headers: [two[0]] }), ranked('/a'));
  });

  it('rule 5: methods before any method', () => {
    expectFirst(ranked('/a', { methods: ['GET'] }), ranked('/a'));
  });

  it('rule 5c: more cookie matches first, after headers (canary-by-header before canary-by-cookie)', () => {
    const cookie = { cookies: [{ name: 'canary', value: 'always' }] };
    expectFirst(ranked('/a', cookie), ranked('/a'));
    expectFirst(ranked('/a', { headers: [{ name: 'x-canary', value: 'always' }] }), ranked('/a', cookie));
    expectFirst(ranked('/a', { methods: ['GET'] }), ranked('/a', cookie));
  });

  it('rule 6: older creationTimestamp first; missing last', () => {
    expectFirst(ranked('/a', {}, { createdMs: 1, name: 'z' }), ranked('/a', {}, { createdMs: 2, name: 'a' }));
    expectFirst(ranked('/a', {}, { createdMs: 5, name: 'z' }), ranked('/a', {}, { name: 'a' }));
  });

  it('rule 7: namespace, name, route name, match index, in code-unit order', () => {
    expectFirst(
      ranked('/a', {}, { namespace: 'a', name: 'z' }),
      ranked('/a', {}, { namespace: 'b', name: 'a' }),
    );
    expectFirst(ranked('/a', {}, { name: 'B' }), ranked('/a', {}, { name: 'a' })); // not locale order
    expectFirst(
      ranked('/a', {}, { routeName: 'a', matchIndex: 9 }),
      ranked('/a', {}, { routeName: 'b', matchIndex: 0 }),
    );
    expectFirst(ranked('/a', {}, { matchIndex: 2 }), ranked('/a', {}, { matchIndex: 10 }));
  });

  it('Gateway API (gatewayApiRule set): a method match before more header matches', () => {
    const ga = { gatewayApiRule: 0 };
    expectFirst(
      ranked('/a', { methods: ['PATCH'] }, ga),
      ranked('/a', { headers: [{ name: 'version', value: 'four' }] }, { gatewayApiRule: 1 }),
    );
    expectFirst(ranked('/a', { headers: [{ name: 'h', value: '1' }] }, ga), ranked('/a', {}, ga));
  });

  it('Gateway API: "namespace/name" as one text, then rules in list order', () => {
    // "team-b/r" < "team/r" ("-" < "/"), where GatewayRoutes compare "team" < "team-b".
    expectFirst(
      ranked('/a', {}, { namespace: 'team-b', name: 'r', gatewayApiRule: 0 }),
      ranked('/a', {}, { namespace: 'team', name: 'r', gatewayApiRule: 0 }),
    );
    expectFirst(
      ranked('/a', {}, { namespace: 'team', name: 'r' }),
      ranked('/a', {}, { namespace: 'team-b', name: 'r' }),
    );
    // Rule 2 before rule 10, though "rule-10-…" sorts first as text.
    expectFirst(
      ranked('/a', {}, { routeName: 'rule-2-match-0', gatewayApiRule: 2 }),
      ranked('/a', {}, { routeName: 'rule-10-match-0', gatewayApiRule: 10 }),
    );
  });

  it('is a total order: only the same entry compares equal', () => {
    expect(comparePrecedence(ranked('/a'), ranked('/a'))).toBe(0);
  });
});

describe('sortByPrecedence', () => {
  it('gives the order comparePrecedence defines (precomputed keys, same result)', () => {
    let seed = 7;
    const pick = <T>(list: readonly T[]): T => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return list[seed % list.length];
    };
    const drafts = Array.from({ length: 600 }, (_, i) =>
      ranked(
        pick(['/', '/a', '/a/b', '/ab', '/a/b/c']),
        {
          type: pick(['Exact', 'Prefix'] as const),
          ...pick([{}, { hosts: ['h'] }]),
          ...pick([
            {},
            { headers: [{ name: 'x', value: '1' }] },
            {
              headers: [
                { name: 'x', value: '1' },
                { name: 'y', value: '2' },
              ],
            },
          ]),
          ...pick([{}, { methods: ['GET'] }]),
          ...pick([{}, { cookies: [{ name: 'c', value: 'always' }] }]),
        },
        {
          createdMs: pick([undefined, 0, 5, 1e12]),
          namespace: pick(['a', 'b']),
          name: pick(['r', 'R', 's']),
          routeName: pick(['x', 'y']),
          matchIndex: i,
          ...pick([{}, { gatewayApiRule: 2 }, { gatewayApiRule: 10 }]),
        },
      ),
    ) as unknown as Draft[];
    const state = { drafts, diagnostics: [] } as unknown as CompileState;
    expect(sortByPrecedence(state).drafts).toEqual([...drafts].sort(comparePrecedence));
  });
});
