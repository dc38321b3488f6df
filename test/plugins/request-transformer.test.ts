import { describe, expect, it } from 'vitest';
import { validateRouteTable } from '../../dataplane/config/validate.ts';
import { Metrics } from '../../dataplane/observability/metrics.ts';
import type { RequestContext } from '../../dataplane/pipeline/context.ts';
import requestTransformer from '../../dataplane/plugins/request-transformer/index.ts';
import type { RuntimeDeps } from '../../dataplane/pipeline/route.ts';
import { route, snapshot, transformer, upstream } from '../helpers/tables.ts';

const deps = { metrics: new Metrics({ processMetrics: false }) } as RuntimeDeps;

function run(config: Parameters<typeof requestTransformer.create>[0], headers: Record<string, string>) {
  const r = route('t', 'upstream/u', '/');
  const hook = requestTransformer.create(config, deps, { id: 'plugin/test/t' }).bind(r).onRequest!;
  const ctx = { headers: { ...headers } } as RequestContext;
  hook(ctx);
  return ctx.headers;
}

describe('request-transformer', () => {
  it('adds X-Gateway-Version as the spec writes it', () => {
    expect(run({ add: { headers: ['X-Gateway-Version:2024-06-01'] } }, {})).toEqual({
      'x-gateway-version': '2024-06-01',
    });
  });

  it('applies remove, rename, replace, add, append in that order', () => {
    const out = run(
      {
        remove: { headers: ['X-Debug'] },
        rename: { headers: ['X-Old:X-New'] },
        replace: { headers: ['X-New:replaced', 'X-Absent:never'] },
        add: { headers: ['X-Present:ignored', 'X-Added:yes'] },
        append: { headers: ['X-Present:second', 'X-List:a'] },
      },
      { 'x-debug': '1', 'x-old': 'value', 'x-present': 'first' },
    );
    expect(out).toEqual({
      'x-new': 'replaced',
      'x-present': 'first, second',
      'x-added': 'yes',
      'x-list': 'a',
    });
  });

  it('keeps the part after the first colon whole (values may hold colons)', () => {
    expect(run({ add: { headers: ['X-Url:http://a:1/b'] } }, {})).toEqual({ 'x-url': 'http://a:1/b' });
  });

  it('refuses values with CR, LF or NUL at validation and again when compiling', () => {
    for (const bad of ['X-A:v\r\nInjected: 1', 'X-A:v\nx', 'X-A:v\u0000', 'Bad Name:v']) {
      const errors = validateRouteTable(
        snapshot(
          [route('r', 'u', '/', { plugins: [transformer('t', { add: { headers: [bad] } })] })],
          [upstream('u', 'http://127.0.0.1:1')],
        ).table,
      );
      expect(errors.map((e) => e.field)).toContain('plugins[0].config.add.headers[0]');
      if (bad.startsWith('X-A')) expect(() => run({ add: { headers: [bad] } }, {})).toThrow(/unsafe header/);
    }
  });

  it('refuses unknown config fields', () => {
    const errors = validateRouteTable(
      snapshot(
        [route('r', 'u', '/', { plugins: [transformer('t', { add: { header: ['X-A:1'] } })] })],
        [upstream('u', 'http://127.0.0.1:1')],
      ).table,
    );
    expect(errors[0]).toMatchObject({ id: 'route/test/r/r/0', field: 'plugins[0].config.add.header' });
  });
});
