/**
 * ip-restriction end to end in one data plane (on 127.0.4.1), clients connecting from other
 * loopback addresses (127.0.4.2, 127.0.4.3): allow, deny, deny over allow, 403 problem+json that
 * never reaches the upstream; the client address behind a trusted proxy is the forwarded one.
 * And its config check: every bad entry named by its field.
 */
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build } from '../../controller/build.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';
import { cidrList, cidrProblem, inCidrList } from '../../dataplane/config/cidr.ts';
import { validateRouteTable } from '../../dataplane/config/validate.ts';
import { type DataPlane, parseTrustedProxies } from '../../dataplane/main.ts';
import { checkIpRestrictionConfig } from '../../dataplane/plugins/ip-restriction/manifest.ts';
import { gatewayPlugin } from '../helpers/fixtures.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { pluginInstance, route, snapshot, upstream } from '../helpers/tables.ts';

// undici's Client option (its connect options do not take it).
const from = (localAddress: string) => new Agent({ localAddress });
const A = from('127.0.4.2');
const B = from('127.0.4.3');

let up: Upstream;
let dp: DataPlane;
let behindProxy: DataPlane;
beforeAll(async () => {
  up = await startUpstream();
  const ip = (name: string, config: Record<string, unknown>) =>
    pluginInstance(name, 'ip-restriction', config);
  const table = snapshot(
    [
      route('allow', 'u', '/allow', { plugins: [ip('allow', { allow: ['127.0.4.2/32', '2001:db8::/32'] })] }),
      route('deny', 'u', '/deny', { plugins: [ip('deny', { deny: ['127.0.4.0/30'] })] }),
      route('both', 'u', '/both', {
        plugins: [ip('both', { allow: ['127.0.4.0/24'], deny: ['127.0.4.3'] })],
      }),
    ],
    [upstream('u', up.url)],
  );
  dp = await startTestDataPlane({ host: '127.0.4.1', initialSnapshot: table });
  behindProxy = await startTestDataPlane({
    host: '127.0.4.1',
    trustedProxies: ['127.0.4.3'],
    initialSnapshot: table,
  });
});
afterAll(async () => {
  await Promise.all([dp.close(), behindProxy.close(), up.close(), A.close(), B.close()]);
});

const get = async (
  plane: DataPlane,
  path: string,
  dispatcher: Agent,
  headers: Record<string, string> = {},
) => {
  const r = await request(`${plane.proxyUrl}${path}`, { dispatcher, headers });
  return { status: r.statusCode, type: r.headers['content-type'], body: await r.body.text() };
};

describe('ip-restriction', () => {
  it('allow: an address in the list is served, one outside it gets 403 problem+json, never proxied', async () => {
    const before = up.seen.length;
    expect((await get(dp, '/allow', A)).status).toBe(200);
    const refused = await get(dp, '/allow', B);
    expect(refused.status).toBe(403);
    expect(refused.type).toBe('application/problem+json');
    expect(JSON.parse(refused.body)).toMatchObject({
      status: 403,
      code: 'SLC_ERR_ADDRESS_REFUSED',
      detail: expect.stringContaining('127.0.4.3'),
    });
    expect(up.seen.length).toBe(before + 1);
  });

  it('deny: every address of the range is refused', async () => {
    expect((await get(dp, '/deny', A)).status).toBe(403);
    expect((await get(dp, '/deny', B)).status).toBe(403);
  });

  it('an address in both lists is refused (deny first, as nginx)', async () => {
    expect((await get(dp, '/both', A)).status).toBe(200);
    expect((await get(dp, '/both', B)).status).toBe(403);
  });

  it('behind a trusted proxy the forwarded client address is the one checked', async () => {
    // B (127.0.4.3) is the trusted proxy: it forwards for 127.0.4.2 (allowed) and 127.0.4.9 (not).
    expect((await get(behindProxy, '/allow', B, { 'x-forwarded-for': '127.0.4.2' })).status).toBe(200);
    expect((await get(behindProxy, '/allow', B, { 'x-forwarded-for': '127.0.4.9' })).status).toBe(403);
    // An untrusted peer's X-Forwarded-For proves nothing: A's own address is checked.
    expect((await get(behindProxy, '/allow', A, { 'x-forwarded-for': '10.9.9.9' })).status).toBe(200);
  });
});

describe('ip-restriction config', () => {
  it('names each entry that is no address or range, and asks for a list', () => {
    expect(
      checkIpRestrictionConfig({ allow: ['10.0.0.0/8', '10.0.0.0/33', 'example.com'], deny: ['::1/129'] }),
    ).toEqual([
      { field: 'allow[1]', message: expect.stringContaining('"10.0.0.0/33" has a prefix length') },
      {
        field: 'allow[2]',
        message: expect.stringContaining('"example.com" is not an IP address or CIDR range'),
      },
      { field: 'deny[0]', message: expect.stringContaining('from 0 to 128') },
    ]);
    expect(checkIpRestrictionConfig({})).toEqual([
      { field: '', message: expect.stringContaining('set allow or deny') },
    ]);
  });

  it("a GatewayPlugin's bad range is refused in its status, naming the spec field", () => {
    const r = build(
      resourceSetFrom([gatewayPlugin('office', 'ip-restriction', { allow: ['10.0.0.0/8', '10.0.0.0/33'] })]),
    );
    expect(JSON.stringify(r.status['GatewayPlugin/default/office'])).toContain(
      'spec.ipRestriction.allow[1]: \\"10.0.0.0/33\\" has a prefix length that is not a whole number from 0 to 32',
    );
  });

  it('the data plane refuses a table with a bad range, naming the plugin config field', () => {
    const table = snapshot(
      [
        route('r', 'u', '/r', {
          plugins: [pluginInstance('bad', 'ip-restriction', { deny: ['10.0.0.0/x'] })],
        }),
      ],
      [upstream('u', 'http://127.0.4.1:1')],
    ).table;
    expect(validateRouteTable(table)).toEqual([
      expect.objectContaining({ field: expect.stringContaining('config.deny[0]') }),
    ]);
  });

  it('IPv6 ranges and addresses; host bits under the prefix are ignored', () => {
    const list = cidrList(['2001:db8::/32', '10.1.2.3/16', '::1']);
    expect(inCidrList(list, '2001:db8:ffff::1')).toBe(true);
    expect(inCidrList(list, '2001:db9::1')).toBe(false);
    expect(inCidrList(list, '10.1.200.1')).toBe(true);
    expect(inCidrList(list, '::1')).toBe(true);
    expect(inCidrList(list, 'not-an-address')).toBe(false);
    expect(cidrProblem('2001:db8::/32')).toBeUndefined();
    expect(cidrProblem('10.0.0.0/')).toBeDefined();
  });

  it('--trusted-proxies reads its entries the same way, naming a bad one', () => {
    expect(parseTrustedProxies(['10.0.0.0/8', '::1'])?.check('10.9.9.9', 'ipv4')).toBe(true);
    expect(() => parseTrustedProxies(['10.0.0.0/x'])).toThrow(
      '--trusted-proxies: "10.0.0.0/x" has a prefix length that is not a whole number from 0 to 32',
    );
  });
});
