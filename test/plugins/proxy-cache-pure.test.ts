/** proxy-cache's pure parts: the key, the storing rules, the TTL, Cache-Status, and the config's cross-field checks. */
import CachePolicy from 'http-cache-semantics';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  appendStatus,
  fwdStatus,
  hitStatus,
  staleHitStatus,
} from '../../dataplane/plugins/proxy-cache/cache-status.ts';
import { consumerKey, sharedKey } from '../../dataplane/plugins/proxy-cache/key.ts';
import { checkProxyCacheConfig } from '../../dataplane/plugins/proxy-cache/manifest.ts';
import { directive, notModifiedFor, storability, ttlMs } from '../../dataplane/plugins/proxy-cache/policy.ts';
import { compileSettings } from '../../dataplane/plugins/proxy-cache/settings.ts';

const s = compileSettings({});
const policy = (res: Record<string, string>, req: Record<string, string> = {}, status = 200) =>
  new CachePolicy({ url: '/r', method: 'GET', headers: { host: 'h', ...req } }, { status, headers: res });
const decide = (res: Record<string, string>, req: Record<string, string> = {}, authenticated = false) =>
  storability(policy(res, req), res, authenticated, s);

describe('proxy-cache key', () => {
  const base = {
    path: '/items',
    query: 'b=2&a=1',
    host: 'API.test',
    routeId: 'route/ns/r/x/0',
    vary: [],
    varyNames: [],
  };

  it('path first (purge by prefix), query sorted, host lower-cased, route, method GET', () => {
    expect(sharedKey(base)).toBe('/items?a=1&b=2|GET|h=api.test|r=route/ns/r/x/0');
    expect(sharedKey({ ...base, query: 'id=2&b=1&id=1' })).toBe(
      '/items?b=1&id=2&id=1|GET|h=api.test|r=route/ns/r/x/0',
    );
  });

  it('configured vary headers and the consumer are part of it, encoded', () => {
    const k = sharedKey({ ...base, varyNames: ['x-tenant', 'accept'], vary: ['a|b', undefined] });
    expect(k).toBe('/items?a=1&b=2|GET|h=api.test|r=route/ns/r/x/0|v=x-tenant=a%7Cb|v=accept=');
    expect(consumerKey(k, 'alice|c=bob')).toBe(`${k}|c=alice%7Cc%3Dbob`);
  });
});

describe('proxy-cache storing rules (RFC 9111 §3)', () => {
  it('explicit freshness or a cacheable-by-default status is stored; no-store and private are not', () => {
    expect(decide({ 'cache-control': 'max-age=60' })).toEqual({ store: true, shared: true });
    expect(decide({ 'cache-control': 'no-store' })).toEqual({ store: false, why: 'uncacheable' });
    expect(decide({ 'cache-control': 'private, max-age=60' })).toEqual({ store: false, why: 'uncacheable' });
  });

  it('§3.5: a request with Authorization is stored only when the response allows it', () => {
    const auth = { authorization: 'Bearer x' };
    expect(decide({ 'cache-control': 'max-age=60' }, auth).store).toBe(false);
    expect(decide({ 'cache-control': 'public, max-age=60' }, auth).store).toBe(true);
    expect(decide({ 'cache-control': 's-maxage=60' }, auth).store).toBe(true);
    expect(decide({ 'cache-control': 'must-revalidate, max-age=60' }, auth).store).toBe(true);
  });

  it("authenticated route: the caller's own entry unless explicitly public (and sharePublic)", () => {
    expect(decide({ 'cache-control': 'max-age=60' }, {}, true)).toEqual({ store: true, shared: false });
    expect(decide({ 'cache-control': 'public, max-age=60' }, {}, true)).toEqual({
      store: true,
      shared: true,
    });
    const own = compileSettings({ sharePublic: false });
    const res = { 'cache-control': 'public, max-age=60' };
    expect(storability(policy(res), res, true, own)).toEqual({ store: true, shared: false });
  });

  it('Vary: *, Set-Cookie, a declared length over maxEntryBytes, and an already expired response are not stored', () => {
    expect(decide({ 'cache-control': 'max-age=60', vary: '*' })).toEqual({ store: false, why: 'vary-star' });
    expect(decide({ 'cache-control': 'max-age=60', 'set-cookie': 'a=1' })).toEqual({
      store: false,
      why: 'set-cookie',
    });
    expect(decide({ 'cache-control': 'max-age=60', 'content-length': String(2 * 1024 * 1024) })).toEqual({
      store: false,
      why: 'too-large',
    });
    expect(decide({ 'cache-control': 'max-age=10', age: '20' })).toEqual({ store: false, why: 'expired' });
  });

  it('the request no-store directive forbids storing', () => {
    expect(decide({ 'cache-control': 'max-age=60' }, { 'cache-control': 'no-store' }).store).toBe(false);
  });
});

describe('proxy-cache TTL in the store', () => {
  // The policy's age counts from its creation in whole ms: a clock that moves between making the
  // policy and reading its TTL made these exact figures flaky (59.999 s) on a loaded machine.
  beforeEach(() => {
    vi.useFakeTimers({ now: Date.now(), toFake: ['Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  it('freshness, plus the capped stale-while-revalidate / stale-if-error, plus keepForRevalidation with a validator', () => {
    expect(ttlMs(policy({ 'cache-control': 'max-age=60' }), s)).toBe(60_000);
    expect(ttlMs(policy({ 'cache-control': 'max-age=60, stale-while-revalidate=30' }), s)).toBe(90_000);
    expect(ttlMs(policy({ 'cache-control': 'max-age=60, stale-if-error=999999' }), s)).toBe(
      60_000 + 86_400_000,
    );
    const capped = compileSettings({ maxStaleIfError: '10s' });
    expect(ttlMs(policy({ 'cache-control': 'max-age=60, stale-if-error=999999' }), capped)).toBe(70_000);
    expect(ttlMs(policy({ 'cache-control': 'no-cache', etag: '"a"' }), s)).toBe(600_000);
    expect(ttlMs(policy({ 'cache-control': 'max-age=10', age: '20' }), s)).toBeLessThanOrEqual(0);
  });

  it('directives are read case-insensitively, with or without quotes', () => {
    expect(directive('Public, Max-Age="5"', 'max-age')).toBe('5');
    expect(directive('public', 'public')).toBe('');
    expect(directive('max-age=5', 'public')).toBeNull();
  });

  it("a client's If-None-Match matches the stored ETag weakly, or with *", () => {
    expect(notModifiedFor('"a", W/"b"', '"b"')).toBe(true);
    expect(notModifiedFor('*', '"x"')).toBe(true);
    expect(notModifiedFor('"a"', '"b"')).toBe(false);
    expect(notModifiedFor('"a"', undefined)).toBe(false);
  });
});

describe('Cache-Status (RFC 9211)', () => {
  it('writes the members the README lists, appended to an upstream cache', () => {
    expect(hitStatus(41.7)).toBe('sluice; hit; ttl=41');
    expect(staleHitStatus(2.2)).toBe('sluice; hit; ttl=-3; detail=stale-while-revalidate');
    expect(fwdStatus('miss', { stored: true })).toBe('sluice; fwd=miss; stored');
    expect(fwdStatus('stale', { status: 503, detail: 'stale-if-error' })).toBe(
      'sluice; fwd=stale; fwd-status=503; detail=stale-if-error',
    );
    const h: Record<string, string> = { 'cache-status': 'origin-cache; hit' };
    appendStatus(h, fwdStatus('miss'));
    expect(h['cache-status']).toBe('origin-cache; hit, sluice; fwd=miss');
  });
});

describe('proxy-cache config checks', () => {
  it('name the field', () => {
    expect(checkProxyCacheConfig({ maxEntryBytes: 4096, memory: { maxBytes: 2048 } })).toEqual([
      {
        field: 'maxEntryBytes',
        message: '(4096) is above memory.maxBytes (2048): no entry that size could be kept',
      },
    ]);
    expect(checkProxyCacheConfig({ store: 'redis', memory: { maxBytes: 4096 } })[0].field).toBe('memory');
    expect(checkProxyCacheConfig({ methods: ['HEAD'] })[0].field).toBe('methods');
    expect(checkProxyCacheConfig({ lock: { ttl: '10ms' } })[0].field).toBe('lock.ttl');
    expect(checkProxyCacheConfig({})).toEqual([]);
    expect(() => compileSettings({ methods: ['POST'] })).toThrow(/methods/);
  });
});
