/** The pure parts of the idempotency plugin: key parsing, canonical JSON bodies, fingerprints, scopes. */
import { describe, expect, it } from 'vitest';
import { scanJson } from '../../dataplane/config/json-scan.ts';
import { canonicalJsonBody, isJsonContentType } from '../../dataplane/plugins/idempotency/canonical-body.ts';
import {
  Fingerprints,
  fingerprint,
  MEMO_TEXT_CHARS,
} from '../../dataplane/plugins/idempotency/fingerprint.ts';
import { readIdempotencyKey } from '../../dataplane/plugins/idempotency/key.ts';
import { callerScope, recordId } from '../../dataplane/plugins/idempotency/scope.ts';
import { compileSettings } from '../../dataplane/plugins/idempotency/settings.ts';

const K = '0123456789abcdef0123456789abcdef'; // 32

describe('readIdempotencyKey', () => {
  const read = (...values: string[]) =>
    readIdempotencyKey(values.flatMap((v) => ['Idempotency-Key', v]).concat(['Host', 'a']), 32, 64);
  it.each([
    [K, K],
    [`  ${K}  `, K],
    [`"${K}"`, K],
    [`"${K}\\"x"`, `${K}"x`],
    ['550e8400-e29b-41d4-a716-446655440000', '550e8400-e29b-41d4-a716-446655440000'],
    ['k'.repeat(64), 'k'.repeat(64)],
  ])('accepts %j as %j', (value, key) => {
    expect(read(value)).toEqual({ key });
  });
  it.each([
    ['31 characters', K.slice(1)],
    ['65 characters', 'k'.repeat(65)],
    ['a space', `${K} x`],
    ['a comma', `${K},x`],
    ['a semicolon', `${K};x`],
    ['a backslash', `${K}\\x`],
    ['a bad escape in a quoted string', `"${K}\\x"`],
    ['a control character', `${K}\u0001`],
    ['non-ASCII', `${K}é`],
    ['a quote inside a bare token', `${K}"`],
  ])('refuses a key with %s', (_what, value) => {
    expect(read(value)).toHaveProperty('error');
  });
  it('refuses two header lines, even with the same value', () => {
    expect(read(K, K)).toEqual({ error: 'Idempotency-Key must be sent once' });
  });
  it('reports a missing header', () => {
    expect(readIdempotencyKey(['Host', 'a'], 32, 64)).toEqual({ missing: true });
  });
});

describe('canonical JSON bodies (RFC 8785)', () => {
  it.each([
    ['{"b":1,"a":2}', '{"a":2,"b":1}'],
    [' { "a" : [ 1 , 2.50 , 1e3 ] } ', '{"a":[1,2.5,1000]}'],
    ['{"a":{"z":null,"y":"\\u0041"}}', '{"a":{"y":"A","z":null}}'],
    ['{"\\u00e9":1,"e":2}', '{"e":2,"é":1}'],
  ])('%s → %s', (input, out) => {
    expect(canonicalJsonBody(input)).toEqual({ text: out });
  });
  it.each([
    ['{"a":1,"a":2}', 'a'],
    ['{"x":{"a":1,"b":{"c":1},"a":3}}', 'a'],
    ['[{"k":1},{"k":2,"k":3}]', 'k'],
    ['{"a":1,"\\u0061":2}', 'a'],
  ])('finds the duplicate key in %s', (input, dup) => {
    expect(canonicalJsonBody(input)).toEqual({ duplicate: dup });
  });
  it('does not confuse keys in sibling objects, array items or string contents', () => {
    expect(scanJson('[{"a":1},{"a":2}]').duplicate).toBeNull();
    expect(scanJson('{"a":"{\\"a\\":1}","b":{"a":1}}').duplicate).toBeNull();
    expect(scanJson('{"a":["a","a"],"b":"a,a"}').duplicate).toBeNull();
    expect(scanJson('{"a":"9007199254740993"}').inexact).toBe(false);
  });
  it.each([
    ['9007199254740993', '9007199254740992'],
    ['0.1000000000000000001', '0.1'],
    ['1e400', '1e401'],
    ['1e-400', '0'],
    ['12345678901234567', '12345678901234568'],
  ])('numbers a double cannot hold exactly are not canonicalized: %s vs %s', (a, b) => {
    expect(canonicalJsonBody(`{"amount":${a}}`)).toEqual({ inexact: true });
    // Either side then hashes as bytes: the two bodies never share a fingerprint.
    expect(canonicalJsonBody(`{"amount":${a}}`)).not.toEqual({ text: `{"amount":${b}}` });
  });
  it.each(['123456789012345', '1.5e300', '-0.000000000000001', '100000000000000000000000', '0.0', '-0'])(
    '%s is exact and canonicalized',
    (n) => {
      expect(canonicalJsonBody(`[${n}]`)).toHaveProperty('text');
    },
  );
  it('a body nested too deep to walk is hashed as bytes, not a crash', () => {
    const deep = `${'['.repeat(20_000)}1${']'.repeat(20_000)}`;
    const r = canonicalJsonBody(deep);
    expect('inexact' in r || 'invalid' in r).toBe(true);
  });
  it('reports invalid JSON as such', () => {
    expect(canonicalJsonBody('{"a":')).toEqual({ invalid: true });
  });
  it.each([
    ['application/json', true],
    ['application/json; charset=utf-8', true],
    ['Application/Problem+JSON', true],
    ['text/json', false],
    ['application/jsonx', false],
    [undefined, false],
  ])('%s is JSON: %s', (ct, yes) => {
    expect(isJsonContentType(ct)).toBe(yes);
  });
});

describe('fingerprint', () => {
  const base = {
    method: 'POST',
    routeId: 'route/default/charges/create/0',
    path: '/charges',
    query: 'b=2&a=1',
    headers: {
      'content-type': 'application/json',
      authorization: 'Bearer a',
      'user-agent': 'x',
      'x-other': '1',
    },
    fingerprintHeaders: ['authorization', 'user-agent'],
    body: Buffer.from('{"amount":100,"currency":"EUR"}'),
  };
  const fp = (change: Partial<typeof base> = {}) => {
    const r = fingerprint({ ...base, ...change });
    if (!('fingerprint' in r)) throw new Error(r.error);
    return r.fingerprint;
  };
  it('is 64 hex characters (spec §8)', () => {
    expect(fp()).toMatch(/^[0-9a-f]{64}$/);
  });
  it('ignores query order, JSON key order and white space, and headers not listed', () => {
    expect(fp({ query: 'a=1&b=2' })).toBe(fp());
    expect(fp({ body: Buffer.from('{ "currency":"EUR", "amount":100 }') })).toBe(fp());
    expect(fp({ headers: { ...base.headers, 'x-other': '2' } })).toBe(fp());
  });
  it.each([
    ['method', { method: 'PATCH' }],
    ['route', { routeId: 'route/default/charges/create/1' }],
    ['path', { path: '/charges/1' }],
    ['query', { query: 'a=1&b=3' }],
    ['order of a repeated parameter', { query: 'b=2&a=1&a=0' }],
    ['content type', { headers: { ...base.headers, 'content-type': 'application/x-www-form-urlencoded' } }],
    ['a listed header', { headers: { ...base.headers, 'user-agent': 'y' } }],
    [
      'a listed header going missing',
      { headers: { 'content-type': 'application/json', authorization: 'Bearer a' } },
    ],
    ['the body', { body: Buffer.from('{"amount":101,"currency":"EUR"}') }],
  ])('changes with the %s', (_what, change) => {
    expect(fp(change as Partial<typeof base>)).not.toBe(fp());
  });
  it('hashes non-JSON bodies (and invalid JSON) as bytes', () => {
    const text = { headers: { ...base.headers, 'content-type': 'text/plain' } };
    expect(fp({ ...text, body: Buffer.from('a b') })).not.toBe(fp({ ...text, body: Buffer.from('a  b') }));
    expect(fp({ body: Buffer.from('{"a":') })).not.toBe(fp({ body: Buffer.from('{"a": ') }));
  });
  it('keeps apart JSON bodies whose numbers differ beyond double precision', () => {
    expect(fp({ body: Buffer.from('{"amount":9007199254740993}') })).not.toBe(
      fp({ body: Buffer.from('{"amount":9007199254740992}') }),
    );
  });
  it('refuses a JSON body with a duplicate key', () => {
    expect(fingerprint({ ...base, body: Buffer.from('{"a":1,"a":1}') })).toHaveProperty('error');
  }); // Records in Redis outlive a rolling upgrade: a retry that reaches a newer pod must hash the
  // same, or it gets a 422. These values were computed by the first release's code.
  it('is stable across versions (JSON body, and a non-JSON body hashed as bytes)', () => {
    expect(fp()).toBe('54bbd0f034888d8888cc3acca8b1532c05f4da93544cf992dd02fa02f8f49393');
    expect(fp({ headers: { ...base.headers, 'content-type': 'text/plain' }, body: Buffer.from('a é') })).toBe(
      '3f7774d638f643d53298e5e6d158518283c4bc38af425763c94e17ba2f067712',
    );
  });
});

// The memo a plugin instance keeps (raw-bytes digest → fingerprint): what it answers must be
// what fingerprint() computes, on a first sight and on every later one.
describe('Fingerprints (remembered by the raw bytes)', () => {
  const base = {
    method: 'POST',
    routeId: 'route/default/charges/create/0',
    path: '/charges',
    query: '',
    headers: { 'content-type': 'application/json', authorization: 'Bearer a' },
    fingerprintHeaders: ['authorization'],
    body: Buffer.from('{"amount":100,"currency":"EUR"}'),
  };
  const bodies = [
    '{"amount":100,"currency":"EUR"}',
    '{ "currency": "EUR", "amount": 100 }',
    '{"amount":101,"currency":"EUR"}',
    '{"amount":9007199254740993}',
    '{"a":',
    '{"a":1,"a":2}',
  ];
  it('answers what fingerprint() does, the first time and the times after', () => {
    const f = new Fingerprints();
    for (let round = 0; round < 3; round++)
      for (const b of bodies) {
        const input = { ...base, body: Buffer.from(b) };
        expect(f.of(input)).toEqual(fingerprint(input));
      }
    expect(f.size).toBe(bodies.length);
  });
  it('a remembered body in another key order is still the same request; another body is not', () => {
    const f = new Fingerprints();
    const of = (b: string, change = {}) => f.of({ ...base, ...change, body: Buffer.from(b) });
    const first = of(bodies[0]);
    expect(of(bodies[0])).toEqual(first);
    expect(of(bodies[1])).toEqual(first);
    expect(of(bodies[2])).not.toEqual(first);
    // The same bytes under another listed header, path or route are other requests.
    expect(of(bodies[0], { headers: { ...base.headers, authorization: 'Bearer b' } })).not.toEqual(first);
    expect(of(bodies[0], { path: '/charges/2' })).not.toEqual(first);
    expect(of(bodies[0], { routeId: 'route/default/charges/create/1' })).not.toEqual(first);
  });
  it('a duplicate key is refused every time, remembered or not', () => {
    const f = new Fingerprints();
    for (let i = 0; i < 2; i++)
      expect(f.of({ ...base, body: Buffer.from('{"a":1,"a":1}') })).toHaveProperty('error');
  });
  it('holds at most its bound, dropping the oldest first', () => {
    const f = new Fingerprints(4);
    for (let i = 0; i < 10; i++) f.of({ ...base, body: Buffer.from(`{"amount":${i}}`) });
    expect(f.size).toBe(4);
    const input = { ...base, body: Buffer.from('{"amount":0}') };
    expect(f.of(input)).toEqual(fingerprint(input));
  });
  it('a body above MEMO_TEXT_CHARS is remembered by its digest, with the same answers', () => {
    const f = new Fingerprints();
    const big = (n: number) => JSON.stringify({ amount: n, note: 'x'.repeat(MEMO_TEXT_CHARS) });
    const reordered = `{"note":${JSON.stringify('x'.repeat(MEMO_TEXT_CHARS))},"amount":1}`;
    for (let round = 0; round < 2; round++)
      for (const b of [big(1), big(2), reordered, `${big(3).slice(0, -1)},"amount":4}`]) {
        const input = { ...base, body: Buffer.from(b) };
        expect(f.of(input)).toEqual(fingerprint(input));
      }
    expect(f.of({ ...base, body: Buffer.from(reordered) })).toEqual(
      f.of({ ...base, body: Buffer.from(big(1)) }),
    );
    expect(f.size).toBe(4);
  });
  it('does not remember what is hashed as bytes anyway (no body, not JSON)', () => {
    const f = new Fingerprints();
    const text = { ...base, headers: { ...base.headers, 'content-type': 'text/plain' } };
    expect(f.of(text)).toEqual(fingerprint(text));
    expect(f.of({ ...base, body: Buffer.alloc(0) })).toEqual(fingerprint({ ...base, body: Buffer.alloc(0) }));
    expect(f.size).toBe(0);
  });
});

describe('record ids and settings', () => {
  it('a record id depends on scope and key and shows neither', () => {
    const id = recordId('authorization\nabc', K);
    expect(id).toMatch(/^[0-9a-f]{64}$/);
    expect(id).not.toContain(K);
    expect(recordId('authorization\nabd', K)).not.toBe(id);
    expect(recordId('authorization\nabc', `${K}x`)).not.toBe(id);
  });
  it('record ids and caller scopes are stable across versions (records outlive an upgrade)', () => {
    expect(recordId('authorization\nabc', 'K'.repeat(40))).toBe(
      '6c3a3a4239211590cf986673f981853d7b31b5532fcfaf7cf6317007e0a5310d',
    );
    const scopeA = 'authorization\n122c4e371d393490e5789c418af3d3854ed07f2b8b087f8ac4b418dba01cf197';
    const ctx = { consumer: null, req: { headers: { authorization: 'Bearer a' } } };
    expect(callerScope(ctx as never)).toBe(scopeA);
    // Remembered per connection: the same answer again, and another header is hashed anew.
    const socket = {};
    const on = (authorization: string) =>
      callerScope({ consumer: null, req: { socket, headers: { authorization } } } as never);
    expect([on('Bearer a'), on('Bearer a')]).toEqual([scopeA, scopeA]);
    expect(on('Bearer b')).toBe(
      callerScope({ consumer: null, req: { headers: { authorization: 'Bearer b' } } } as never),
    );
    expect(on('Bearer b')).not.toBe(scopeA);
    expect(on('Bearer a')).toBe(scopeA);
  });
  it('fills in the spec defaults', () => {
    expect(compileSettings({})).toMatchObject({
      minKey: 32,
      maxKey: 64,
      ttlMs: 86_400_000,
      leaseMs: 10_000,
      waitMs: 0,
      fingerprintHeaders: ['authorization', 'user-agent'],
      maxResponseBytes: 1_048_576,
      operationsPrefix: null,
    });
    expect([...compileSettings({}).methods]).toEqual(['POST', 'PATCH']);
  });
  it('refuses min above max and leases under 100ms', () => {
    expect(() => compileSettings({ keyLength: { min: 40, max: 39 } })).toThrow(/keyLength/);
    expect(() => compileSettings({ lease: '50ms' })).toThrow(/lease/);
  });
});
