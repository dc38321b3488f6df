/** The data plane's check at the door: rules across a plugin config's fields name the route and the field. */
import { describe, expect, it } from 'vitest';
import { validateRouteTable } from '../../dataplane/config/validate.ts';
import { idempotencyPlugin, rateLimitPlugin, route, snapshot, upstream } from '../helpers/tables.ts';

describe('validateRouteTable, plugin rules', () => {
  it('names the route id and the field of each broken rule', () => {
    const table = snapshot(
      [
        route('a', 'u', '/a', { plugins: [rateLimitPlugin('rl', { policy: 'local' })] }),
        route('b', 'u', '/b', { plugins: [idempotencyPlugin('idem', { keyLength: { min: 50, max: 40 } })] }),
      ],
      [upstream('u', 'http://127.0.0.1:9')],
    ).table;
    expect(validateRouteTable(table)).toEqual([
      {
        id: 'route/test/a/a/0',
        field: 'plugins[0].config',
        message: 'rate-limiting: set at least one of second, minute, hour, day',
      },
      {
        id: 'route/test/b/b/0',
        field: 'plugins[0].config.keyLength.min',
        message: 'idempotency: (50) is above keyLength.max (40)',
      },
    ]);
  });
});

describe('validateRouteTable, query matches', () => {
  it('names the route and the value of a pattern that does not compile or could backtrack catastrophically', () => {
    const q = (value: string) => ({
      match: {
        path: { type: 'Prefix' as const, value: '/' },
        query: [{ name: 'q', type: 'RegularExpression' as const, value }],
      },
    });
    const table = snapshot(
      [
        route('ok', 'u', '/ok', q('[a-z]+')),
        route('bad', 'u', '/bad', q('(a+)+')),
        route('broken', 'u', '/x', q('(')),
      ],
      [upstream('u', 'http://127.0.0.1:9')],
    ).table;
    const errors = validateRouteTable(table);
    expect(errors.map((e) => [e.id, e.field])).toEqual([
      ['route/test/bad/bad/0', 'match.query[0].value'],
      ['route/test/broken/broken/0', 'match.query[0].value'],
    ]);
    expect(errors[0].message).toContain('backtrack catastrophically');
    expect(errors[1].message).toContain('not a valid regular expression');
  });
});

describe("validateRouteTable, a backend's header edits", () => {
  it("refuses a templated value: a backend's edits are literal", () => {
    const table = snapshot(
      [
        {
          ...route('edits', 'u', '/'),
          handler: {
            type: 'proxy',
            backends: [
              { upstream: 'u', weight: 1, requestHeaders: { add: { headers: ['X-A:{{ consumer.id }}'] } } },
            ],
          },
        },
      ],
      [upstream('u', 'http://127.0.0.1:9')],
    ).table;
    expect(validateRouteTable(table)).toEqual([
      {
        id: 'route/test/edits/edits/0',
        field: 'handler.backends[0].requestHeaders.add.headers[0]',
        message: 'a backend header value is literal: "{{" is not allowed',
      },
    ]);
  });
});

describe('validateRouteTable, Gateway listeners', () => {
  const cert = (id: string, hosts: string[]) => ({ id, hosts, cert: 'PEM', key: 'PEM' });
  const base = () =>
    snapshot(
      [route('a', 'u', '/a', { listeners: ['listener/ns/gw/http'] })],
      [upstream('u', 'http://127.0.0.1:9')],
    ).table;

  it('accepts listeners sharing a port by hostname, HTTPS with its certificates, a route naming one', () => {
    const table = {
      ...base(),
      certificates: [
        cert('gateway-certificate/ns/a', ['a.example']),
        cert('gateway-certificate/ns/b', ['a.example']),
      ],
      listeners: [
        { id: 'listener/ns/gw/http', port: 30080, protocol: 'HTTP' as const },
        { id: 'listener/ns/gw/http-a', port: 30080, protocol: 'HTTP' as const, hostname: '*.a.example' },
        // Two listeners may present certificates for the same host: each chooses among its own.
        {
          id: 'listener/ns/gw/https',
          port: 30443,
          protocol: 'HTTPS' as const,
          certificates: ['gateway-certificate/ns/a'],
        },
        {
          id: 'listener/ns/gw2/https',
          port: 30444,
          protocol: 'HTTPS' as const,
          certificates: ['gateway-certificate/ns/b'],
        },
      ],
    };
    expect(validateRouteTable(table)).toEqual([]);
  });

  it('names the listener and the field of each problem, and the route naming an unknown listener', () => {
    const table = {
      ...base(),
      certificates: [
        cert('gateway-certificate/ns/a', ['a.example']),
        cert('gateway-certificate/ns/b', ['a.example']),
      ],
      listeners: [
        { id: 'listener/ns/gw/x', port: 30080, protocol: 'HTTP' as const },
        {
          id: 'listener/ns/gw/x',
          port: 30080,
          protocol: 'HTTPS' as const,
          certificates: ['gateway-certificate/ns/zz'],
        },
        { id: 'listener/ns/gw/h', port: 30081, protocol: 'HTTP' as const, hostname: 'Upper.Example' },
        {
          id: 'listener/ns/gw/c',
          port: 30082,
          protocol: 'HTTP' as const,
          certificates: ['gateway-certificate/ns/a'],
        },
        { id: 'listener/ns/gw/n', port: 30083, protocol: 'HTTPS' as const },
        {
          id: 'listener/ns/gw/two',
          port: 30084,
          protocol: 'HTTPS' as const,
          certificates: ['gateway-certificate/ns/a', 'gateway-certificate/ns/b'],
        },
      ],
    };
    expect(validateRouteTable(table)).toEqual([
      { id: 'listener/ns/gw/x', field: 'id', message: 'duplicate listener id (listeners[1])' },
      {
        id: 'listener/ns/gw/x',
        field: 'protocol',
        message: 'HTTPS on port 30080, where listener/ns/gw/x is HTTP',
      },
      {
        id: 'listener/ns/gw/x',
        field: 'hostname',
        message: 'another listener on port 30080 has no hostname',
      },
      {
        id: 'listener/ns/gw/x',
        field: 'certificates[0]',
        message: 'unknown certificate gateway-certificate/ns/zz',
      },
      {
        id: 'listener/ns/gw/h',
        field: 'hostname',
        message: 'not a lower-case host name or *.suffix: Upper.Example',
      },
      { id: 'listener/ns/gw/c', field: 'certificates', message: 'an HTTP listener presents no certificate' },
      {
        id: 'listener/ns/gw/n',
        field: 'certificates',
        message: 'an HTTPS listener needs at least one certificate',
      },
      {
        id: 'listener/ns/gw/two',
        field: 'certificates[1]',
        message: 'host a.example is already served on this listener by gateway-certificate/ns/a',
      },
      { id: 'route/test/a/a/0', field: 'listeners[0]', message: 'unknown listener listener/ns/gw/http' },
    ]);
  });
});

describe('validateRouteTable, upstream protocol', () => {
  it('h2c only over an http:// url', () => {
    const table = snapshot(
      [route('a', 'u', '/a'), route('b', 'v', '/b')],
      [
        { ...upstream('u', 'http://127.0.0.1:9'), protocol: 'h2c' as const },
        { ...upstream('v', 'https://127.0.0.1:9'), protocol: 'h2c' as const },
      ],
    ).table;
    expect(validateRouteTable(table)).toEqual([
      { id: 'v', field: 'protocol', message: 'h2c is cleartext: the url must be http://' },
    ]);
  });
});

describe('validateRouteTable, regular-expression paths', () => {
  const withPath = (value: string) => {
    const table = snapshot([route('a', 'u', '/a')], [upstream('u', 'http://127.0.0.1:9')]).table;
    table.routes[0].match.path = { type: 'RegularExpression', value };
    return table;
  };

  it('accepts a pattern that compiles and cannot backtrack catastrophically', () => {
    expect(validateRouteTable(withPath('/api/v[0-9]+/(users|teams)'))).toEqual([]);
  });

  it('refuses one that does not compile, does not start with "/", or could backtrack catastrophically', () => {
    const problem = (value: string) => validateRouteTable(withPath(value)).map((e) => [e.field, e.message]);
    expect(problem('/api/(')[0][0]).toBe('match.path.value');
    expect(problem('/api/(')[0][1]).toMatch(/^is not a valid regular expression/);
    expect(problem('api')).toEqual([['match.path.value', 'must start with "/"']]);
    expect(problem('/(a+)+$')).toEqual([
      ['match.path.value', 'could backtrack catastrophically (nested or repeated quantifiers); rewrite it'],
    ]);
  });
});

describe('validateRouteTable, a rewrite with captures', () => {
  const withRewrite = (type: 'RegularExpression' | 'Prefix', pattern: string, value: string) => {
    const table = snapshot([route('a', 'u', '/a')], [upstream('u', 'http://127.0.0.1:9')]).table;
    table.routes[0].match.path = { type, value: pattern };
    table.routes[0].rewrite = { path: { type: 'ReplaceFullPathWithCaptures', value } };
    return validateRouteTable(table).map((e) => [e.field, e.message]);
  };

  it('accepts references to groups the path regex has', () => {
    expect(withRewrite('RegularExpression', '/api(/|$)(.*)', '/v2/$2')).toEqual([]);
    expect(withRewrite('RegularExpression', '/api', '/static/')).toEqual([]);
  });

  it('refuses a reference past the groups, a bare "$", and a match that is not a regular expression', () => {
    expect(withRewrite('RegularExpression', '/api(/|$)(.*)', '/$3')).toEqual([
      ['rewrite.path', 'refers to $3, but the path has 2 capture groups'],
    ]);
    expect(withRewrite('RegularExpression', '/api/(.*)', '/$0')).toEqual([
      ['rewrite.path', '"$" must start a capture reference, $1 to $9'],
    ]);
    expect(withRewrite('Prefix', '/api', '/$1')).toEqual([
      ['rewrite.path', 'ReplaceFullPathWithCaptures needs a RegularExpression path match'],
    ]);
  });
});
