/**
 * basic-auth: htpasswd files as Apache's htpasswd and openssl write them (bcrypt, apr1, MD5-crypt,
 * {SHA}; the vectors below were made by those tools, not by the libraries verifying them), and
 * the plugin in a data plane: missing or wrong credentials are 401 with a Basic challenge of the
 * realm and reach nothing; good ones reach the upstream with the user as the identity.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { basicCredentials } from '../../dataplane/plugins/basic-auth/index.ts';
import { hashKind, readHtpasswd, verifyPassword } from '../../dataplane/plugins/basic-auth/htpasswd.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';

// ingress-nginx's documented example (htpasswd -c auth foo, password bar).
const APR1_FOO = '$apr1$OFG3Xybp$ckL0FHDAkoXYIlH9.cysT0';
// openssl passwd -apr1 -salt 12345678 s3cret; openssl passwd -1 -salt abcdefgh s3cret; {SHA}: sha1, base64.
const APR1 = '$apr1$12345678$1SnGMP2YoEXzj3WukKVJH1';
const MD5 = '$1$abcdefgh$7.vq19w/w3Vm.hk1FOA7Q/';
const SHA = '{SHA}/vNB+F2HQ559kaLUZbmHHvZrXpg=';
// OpenBSD's bcrypt test vector: "U*U".
const BCRYPT = '$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW';

describe('htpasswd', () => {
  it('reads users and hashes, the first line of a user winning; comments, blank lines and comments after the hash', () => {
    const r = readHtpasswd(`# users\nfoo:${APR1_FOO}\n\nann:${SHA}:a comment\nfoo:${SHA}\r\n`);
    expect([...r.users]).toEqual([
      ['foo', APR1_FOO],
      ['ann', SHA],
    ]);
    expect(r.problems).toEqual([]);
  });

  it('reports lines it cannot verify, naming the line and the user, never the hash', () => {
    const r = readHtpasswd('des:abJnggxhB/yWI\nplain:{PLAIN}pw\nnocolon\n');
    expect(r.users.size).toBe(0);
    expect(r.problems).toEqual([
      'line 1: the hash of des is not bcrypt, apr1/MD5 or {SHA}',
      'line 2: the hash of plain is not bcrypt, apr1/MD5 or {SHA}',
      'line 3: not user:hash',
    ]);
  });

  it.each([
    ['apr1 (ingress-nginx example)', APR1_FOO, 'bar', 'md5'],
    ['apr1', APR1, 's3cret', 'md5'],
    ['MD5-crypt', MD5, 's3cret', 'md5'],
    ['{SHA}', SHA, 's3cret', 'sha1'],
    ['bcrypt $2a$', BCRYPT, 'U*U', 'bcrypt'],
    ['bcrypt $2y$', BCRYPT.replace('$2a$', '$2y$'), 'U*U', 'bcrypt'],
  ])('verifies %s, and refuses another password', async (_name, hash, password, kind) => {
    expect(hashKind(hash)).toBe(kind);
    expect(await verifyPassword(password, hash)).toBe(true);
    expect(await verifyPassword(`${password}x`, hash)).toBe(false);
    expect(await verifyPassword('', hash)).toBe(false);
  });

  it('refuses every password for a hash of another kind', async () => {
    expect(await verifyPassword('pw', '{PLAIN}pw')).toBe(false);
  });

  it('reads Basic credentials: the scheme in any case, the password may hold ":"', () => {
    const b = (s: string) => Buffer.from(s).toString('base64');
    expect(basicCredentials(`Basic ${b('foo:b:ar')}`)).toEqual({ user: 'foo', password: 'b:ar' });
    expect(basicCredentials(`bAsIc ${b('foo:')}`)).toEqual({ user: 'foo', password: '' });
    expect(basicCredentials(`Basic ${b(':pw')}`)).toBeUndefined();
    expect(basicCredentials(`Bearer ${b('foo:bar')}`)).toBeUndefined();
    expect(basicCredentials(undefined)).toBeUndefined();
  });
});

const b64 = (s: string) => Buffer.from(s).toString('base64');
const basicAuth = (config: Record<string, unknown>) => ({
  id: 'plugin/test/users',
  name: 'basic-auth' as const,
  config,
  source: { kind: 'GatewayPlugin', namespace: 'test', name: 'users', generation: 1 },
});

let up: Upstream;
let dp: DataPlane;
beforeAll(async () => {
  up = await startUpstream();
  const file = { secretKeyRef: { name: 'users', key: 'auth' }, value: b64(`foo:${APR1_FOO}\nann:${SHA}\n`) };
  const map = { secretKeyRef: { name: 'map', key: 'bob' }, user: 'bob', value: b64(`${BCRYPT}\n`) };
  dp = await startTestDataPlane({
    initialSnapshot: snapshot(
      [
        route('a', 'u', '/a', {
          plugins: [basicAuth({ realm: 'Authentication Required - foo', credentials: [file, map] })],
        }),
        route('c', 'u', '/c', { plugins: [basicAuth({ credentials: [file], consumerHeader: 'X-User' })] }),
      ],
      [upstream('u', up.url)],
    ),
  });
});
afterAll(async () => {
  await dp?.close();
  await up?.close();
});

const call = async (path: string, headers: Record<string, string> = {}) => {
  const r = await request(`${dp.proxyUrl}${path}`, { headers });
  return { status: r.statusCode, headers: r.headers, body: await r.body.text() };
};
const as = (user: string, password: string) => ({ authorization: `Basic ${b64(`${user}:${password}`)}` });

describe('basic-auth in a data plane', () => {
  it('no credentials: 401 with the Basic challenge of the realm; nothing reaches the upstream', async () => {
    const n = up.seen.length;
    const r = await call('/a');
    expect(r.status).toBe(401);
    expect(r.headers['www-authenticate']).toBe('Basic realm="Authentication Required - foo"');
    expect(JSON.parse(r.body).code).toBe('SLC_ERR_CREDENTIALS_MISSING');
    expect((await call('/c')).headers['www-authenticate']).toBe('Basic realm="sluice"');
    expect(up.seen.length).toBe(n);
  });

  it('a wrong password or an unknown user: 401, nothing reaches the upstream', async () => {
    const n = up.seen.length;
    for (const [user, pw] of [
      ['foo', 'baz'],
      ['nobody', 'bar'],
      ['bob', 'U*U '],
    ]) {
      const r = await call('/a', as(user, pw));
      expect(r.status).toBe(401);
      expect(JSON.parse(r.body).code).toBe('SLC_ERR_CREDENTIALS_INVALID');
    }
    expect(up.seen.length).toBe(n);
  });

  it("good credentials of the file's and the map's users reach the upstream, Authorization kept (as nginx)", async () => {
    for (const [user, pw] of [
      ['foo', 'bar'],
      ['ann', 's3cret'],
      ['bob', 'U*U'],
      ['bob', 'U*U'], // remembered: the same answer
    ]) {
      const r = await call('/a', as(user, pw));
      expect(r.status).toBe(200);
      expect(up.seen.at(-1)!.headers.authorization).toBe(as(user, pw).authorization);
    }
  });

  it('consumerHeader carries the user upstream and a client cannot forge it', async () => {
    expect((await call('/c', { ...as('ann', 's3cret'), 'x-user': 'foo' })).status).toBe(200);
    expect(up.seen.at(-1)!.headers['x-user']).toBe('ann');
  });
});
