/**
 * cors as pure functions: which origins are allowed (exact, `*.` wildcards, anchored regexes,
 * `*`), what a preflight is answered, how Vary is merged, and what validation refuses (naming
 * the field) before anything runs.
 */
import { describe, expect, it } from 'vitest';
import { validateRouteTable } from '../../dataplane/config/validate.ts';
import { checkCorsConfig, type CorsConfig } from '../../dataplane/plugins/cors/manifest.ts';
import { compileOrigins as compile } from '../../dataplane/config/origins.ts';
import { anchoredRegex } from '../../dataplane/config/regex.ts';

const compileOrigins = (origins: string[], regex: string[]) => compile(origins, regex.map(anchoredRegex));
import { compilePolicy, headerList, mergeVary } from '../../dataplane/plugins/cors/policy.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

const corsPlugin = (config: Record<string, unknown>) => ({
  id: 'plugin/test/cors',
  name: 'cors' as const,
  config,
  source: { kind: 'GatewayPlugin', namespace: 'test', name: 'cors', generation: 1 },
});
const validate = (config: Record<string, unknown>) =>
  validateRouteTable(
    snapshot([route('r', 'u', '/', { plugins: [corsPlugin(config)] })], [upstream('u', 'http://127.0.0.1:1')])
      .table,
  );
const fields = (config: Record<string, unknown>) => validate(config).map((e) => e.field);

describe('cors origins', () => {
  it('allows exact origins only as written (scheme, host and port)', () => {
    const o = compileOrigins(['https://app.example.com', 'http://localhost:3000'], []);
    expect(o.allows('https://app.example.com')).toBe(true);
    expect(o.allows('http://localhost:3000')).toBe(true);
    for (const bad of [
      'http://app.example.com',
      'https://app.example.com:8443',
      'https://app.example.com.evil.test',
      'http://localhost:3001',
      'null',
    ])
      expect(o.allows(bad), bad).toBe(false);
  });

  it('matches *.example.com as one or more labels, never the bare domain or a look-alike', () => {
    const o = compileOrigins(['https://*.example.com', 'http://*.dev.test:8080'], []);
    expect(o.allows('https://a.example.com')).toBe(true);
    expect(o.allows('https://a.b.example.com')).toBe(true);
    expect(o.allows('http://x.dev.test:8080')).toBe(true);
    for (const bad of [
      'https://example.com',
      'https://.example.com',
      'https://evilexample.com',
      'https://a.example.com.evil.test',
      'https://a.example.com:444',
      'http://a.example.com',
      'https://a/b.example.com',
      'https://a:1@b.example.com',
      'http://x.dev.test',
      'http://x.dev.test:80800',
    ])
      expect(o.allows(bad), bad).toBe(false);
  });

  it('anchors regexes: a match must cover the whole origin', () => {
    const o = compileOrigins([], ['https://[a-z]+\\.corp\\.test']);
    expect(o.allows('https://wiki.corp.test')).toBe(true);
    expect(o.allows('https://wiki.corp.test.evil.test')).toBe(false);
    expect(o.allows('http://x.https://wiki.corp.test')).toBe(false);
  });

  it('never lets a pattern allow the opaque origin "null"', () => {
    expect(compileOrigins([], ['.*']).allows('null')).toBe(false);
    expect(compileOrigins(['*'], []).allows('null')).toBe(true);
  });

  it('never runs a regex on an Origin longer than any real origin', () => {
    const o = compileOrigins([], ['https://.*']);
    expect(o.allows(`https://${'a'.repeat(280)}`)).toBe(true);
    expect(o.allows(`https://${'a'.repeat(400)}`)).toBe(false);
  });

  it('"*" allows every origin', () => {
    expect(compileOrigins(['*'], []).allows('https://anything.test')).toBe(true);
  });
});

describe('cors policy', () => {
  const policy = (config: CorsConfig) => compilePolicy(config);

  it('echoes an allowed origin, answers "*" for any origin without credentials, null when not allowed', () => {
    expect(policy({ origins: ['https://a.test'] }).allowOrigin('https://a.test')).toBe('https://a.test');
    expect(policy({ origins: ['https://a.test'] }).allowOrigin('https://b.test')).toBeNull();
    expect(policy({ origins: ['*'] }).allowOrigin('https://b.test')).toBe('*');
  });

  it('never answers "*" with credentials, even for a config that skipped validation', () => {
    expect(policy({ origins: ['*'], credentials: true }).allowOrigin('https://b.test')).toBe(
      'https://b.test',
    );
  });

  it('answers an allowed preflight with methods, requested headers reflected, credentials, max-age', () => {
    const answer = policy({
      origins: ['https://a.test'],
      credentials: true,
      maxAge: 600,
      exposeHeaders: ['X-Total'],
    }).preflight('https://a.test', 'PUT', 'Content-Type, X-Trace', false);
    expect(answer).toEqual({
      allowed: true,
      headers: {
        'access-control-allow-origin': 'https://a.test',
        'access-control-allow-methods': 'GET, HEAD, POST, PUT, PATCH, DELETE',
        'access-control-allow-headers': 'content-type, x-trace',
        'access-control-allow-credentials': 'true',
        'access-control-expose-headers': 'X-Total',
        'access-control-max-age': '600',
        vary: 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers',
      },
    });
  });

  it('answers the configured allowHeaders, and refuses a header outside them', () => {
    const p = policy({ origins: ['https://a.test'], allowHeaders: ['Content-Type', 'Authorization'] });
    const ok = p.preflight('https://a.test', 'POST', 'authorization,content-type', false);
    expect(ok.allowed && ok.headers['access-control-allow-headers']).toBe('Content-Type, Authorization');
    expect(p.preflight('https://a.test', 'POST', 'authorization, x-other', false)).toMatchObject({
      allowed: false,
      reason: 'the request header "x-other" is not allowed',
    });
  });

  it('refuses a preflight for an origin or a method that is not allowed, saying which', () => {
    const p = policy({ origins: ['https://a.test'], methods: ['GET', 'POST'] });
    expect(p.preflight('https://b.test', 'GET', undefined, false)).toMatchObject({
      allowed: false,
      reason: 'the origin "https://b.test" is not allowed',
    });
    expect(p.preflight('https://a.test', 'DELETE', undefined, false)).toMatchObject({
      allowed: false,
      reason: 'the method "DELETE" is not allowed',
    });
  });

  it('methods "*" allows any method, answered with the one asked for, credentials or not', () => {
    for (const credentials of [false, true]) {
      const p = policy({ origins: ['https://a.test'], methods: ['*'], credentials });
      const answer = p.preflight('https://a.test', 'PURGE', undefined, false);
      expect(answer).toMatchObject({ allowed: true, headers: { 'access-control-allow-methods': 'PURGE' } });
    }
  });

  it('allows private network access only when configured', () => {
    const on = policy({ origins: ['https://a.test'], privateNetwork: true }).preflight(
      'https://a.test',
      'GET',
      undefined,
      true,
    );
    expect(on.allowed && on.headers['access-control-allow-private-network']).toBe('true');
    expect(on.allowed && on.headers.vary).toContain('Access-Control-Request-Private-Network');
    const off = policy({ origins: ['https://a.test'] }).preflight('https://a.test', 'GET', undefined, true);
    expect(off.allowed && off.headers['access-control-allow-private-network']).toBeUndefined();
  });

  it('reads Access-Control-Request-Headers as names, refusing what is not one', () => {
    expect(headerList(' X-A ,x-b,, ')).toEqual(['x-a', 'x-b']);
    expect(headerList('x-a, bad name')).toBeNull();
  });

  it('merges Origin into an upstream Vary once', () => {
    expect(mergeVary(undefined)).toBe('Origin');
    expect(mergeVary('Accept-Encoding')).toBe('Accept-Encoding, Origin');
    expect(mergeVary(['Accept', 'Accept-Language'])).toBe('Accept, Accept-Language, Origin');
    expect(mergeVary('accept, ORIGIN')).toBe('accept, ORIGIN');
    expect(mergeVary('*')).toBe('*');
  });
});

describe('cors validation', () => {
  it('accepts the documented shape', () => {
    expect(
      validate({
        origins: ['https://app.example.com', 'https://*.example.com', 'http://[::1]:8080'],
        originRegex: ['https://[a-z0-9-]+\\.corp\\.test'],
        methods: ['GET', 'POST'],
        allowHeaders: ['Content-Type', 'Authorization'],
        exposeHeaders: ['X-Request-Id'],
        credentials: true,
        maxAge: 600,
        privateNetwork: true,
      }),
    ).toEqual([]);
  });

  it('refuses credentials with "*", naming credentials', () => {
    expect(fields({ origins: ['*'], credentials: true })).toEqual(['plugins[0].config.credentials']);
  });

  it('refuses an invalid regex and a catastrophic one, naming the entry', () => {
    const errors = validate({ originRegex: ['https://ok\\.test', 'https://(a', 'https://(a+)+\\.test'] });
    expect(errors.map((e) => e.field)).toEqual([
      'plugins[0].config.originRegex[1]',
      'plugins[0].config.originRegex[2]',
    ]);
    expect(errors[0].message).toMatch(/not a valid regular expression/);
    expect(errors[1].message).toMatch(/backtrack catastrophically/);
  });

  it('refuses origins that are not serialized origins (paths, upper case, partial wildcards)', () => {
    for (const bad of ['https://a.test/', 'https://A.test', 'a.test', 'https://a*.test', 'null', '*.a.test'])
      expect(fields({ origins: [bad] }), bad).toEqual(['plugins[0].config.origins[0]']);
  });

  it('refuses methods "*" next to other methods', () => {
    expect(fields({ origins: ['https://a.test'], methods: ['*', 'GET'] })).toEqual([
      'plugins[0].config.methods',
    ]);
    expect(fields({ origins: ['https://a.test'], methods: ['*'] })).toEqual([]);
  });

  it('refuses a config that allows no origin, and "*" next to other origins', () => {
    expect(checkCorsConfig({})).toEqual([
      { field: '', message: expect.stringMatching(/set origins or originRegex/) },
    ]);
    expect(fields({ origins: ['*', 'https://a.test'] })).toEqual(['plugins[0].config.origins']);
  });

  it('refuses allowHeaders "*" and exposeHeaders "*" with credentials', () => {
    expect(fields({ origins: ['https://a.test'], allowHeaders: ['*'] })).toEqual([
      'plugins[0].config.allowHeaders[0]',
    ]);
    expect(fields({ origins: ['https://a.test'], credentials: true, exposeHeaders: ['*'] })).toEqual([
      'plugins[0].config.exposeHeaders[0]',
    ]);
    expect(fields({ origins: ['https://a.test'], exposeHeaders: ['*'] })).toEqual([]);
  });

  it('refuses unknown fields and out-of-range values', () => {
    expect(fields({ origins: ['https://a.test'], maxAge: -1 })).toEqual(['plugins[0].config.maxAge']);
    expect(fields({ origins: ['https://a.test'], allowOrigins: [] })).toEqual([
      'plugins[0].config.allowOrigins',
    ]);
  });
});
