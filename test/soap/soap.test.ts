/**
 * The soap handler in a real data plane, its routes compiled by the real controller: a real SOAP
 * service (the `soap` npm package serving a WSDL, 1.1 and 1.2) and a real HTTP server pretending
 * to be one (XXE, billion laughs, depth, size, not XML). Success through declared elements and
 * through the generic mapping, faults of both kinds and versions, an injection attempt that
 * arrives as text, hostile responses refused, the request refused before any call when its
 * JSON is malformed, plugins in front (jwt, request-transformer, rate limit, cache, idempotency), the
 * service's timeout and breaker, and the per-route metric.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { gatewayRoute, snapshotOf } from '../aggregate/helpers.ts';
import { hsJwt, hsJwtResources } from '../helpers/hs-jwt.ts';
import { freePort, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { CREATE_ACTION, ORDERS_NS, type SoapService, startSoapService } from '../../examples/soap-service.ts';

let svc: SoapService;
let evil: Upstream;
let dp: DataPlane;

const XXE = `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>
<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><R><v>&e;</v></R></soap:Body></soap:Envelope>`;
const LAUGHS = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">${Array.from(
  { length: 9 },
  (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? '' : i};`.repeat(10)}">`,
).join('')}]>
<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><R><v>&lol9;</v></R></soap:Body></soap:Envelope>`;
const envelope = (body: string) =>
  `<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>${body}</soap:Body></soap:Envelope>`;

const inV = (text: string) => envelope(`<R><v>${text}</v></R>`);
/** 200 answers that are not well-formed XML 1.0, one per way of not being it. */
const MALFORMED: Record<string, string | Buffer> = {
  'undeclared entity': inV('&foo;'),
  'an HTML entity (undeclared in XML)': inV('&nbsp;'),
  'undeclared entity in an attribute': inV('<x a="&foo;"/>'),
  'reference to NUL': inV('&#0;'),
  'hex reference to NUL': inV('&#x0;'),
  'reference to a C0 control': inV('&#1;'),
  'reference to a surrogate': inV('&#xD800;'),
  'reference to U+FFFE': inV('&#xFFFE;'),
  'reference above U+10FFFF': inV('&#x110000;'),
  'empty reference': inV('&#;'),
  'bare ampersand': inV('a & b'),
  'raw NUL': inV('a\u0000b'),
  'raw C0 control': inV('a\u0001b'),
  'raw U+FFFF': inV('a\uFFFFb'),
  'unclosed root':
    '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><R/></soap:Body>',
  'unclosed inner tag': inV('<x>'),
  'mismatched tags': inV('<x></y>'),
  'text after the root': `${inV('x')}trailing`,
  'an element after the root': `${inV('x')}<more/>`,
  'two documents': `<?xml version="1.0"?>${inV('x')}<?xml version="1.0"?>${inV('y')}`,
  '"]]>" in text': inV('a ]]> b'),
  '"<" in an attribute': inV('<x a="<"/>'),
  'duplicate attribute': inV('<x a="1" a="2"/>'),
  '"--" in a comment': inV('<!-- a -- b -->'),
  'a misplaced XML declaration': inV('<?xml version="1.0"?>'),
  'overlong UTF-8': Buffer.concat([
    Buffer.from(inV('|').split('|')[0]),
    Buffer.from([0xc0, 0xae]),
    Buffer.from(inV('|').split('|')[1]),
  ]),
};
/** Well-formed answers near those: they are answered 200. */
const WELL_FORMED: Record<string, string> = {
  'leading zeros in a reference': inV('&#x0000041;&#0066;'),
  'a comment and white space after the root': `${inV('ok')}<!-- c -->\n  `,
  '">" in text': inV('a > b'),
};
const ORDER_ELEMENTS = [
  { path: 'customer', value: '{{ body.customer }}' },
  { path: 'item/sku', value: '{{ body.item.sku }}' },
  { path: 'item/qty', value: '{{ body.item.qty }}' },
  { path: 'note', value: '{{ body.note }}' },
];
const soapRule = (name: string, soap: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  name,
  paths: [`/${name}`],
  soap: { operation: 'CreateOrder', namespace: ORDERS_NS, action: CREATE_ACTION, ...soap },
  ...extra,
});
const withService = (route: ReturnType<typeof gatewayRoute>, service: Record<string, unknown>) => ({
  ...route,
  spec: { ...route.spec, service: { ...route.spec.service, ...service } },
});

beforeAll(async () => {
  svc = await startSoapService();
  evil = await startUpstream((req, res) => {
    const xml = (status: number, text: string, type = 'text/xml; charset=utf-8') =>
      res.writeHead(status, { 'content-type': type }).end(text);
    const path = req.url ?? '/';
    if (path === '/xxe') xml(200, XXE);
    else if (path === '/laughs') xml(200, LAUGHS);
    else if (path === '/deep') xml(200, envelope(`${'<a>'.repeat(100)}x${'</a>'.repeat(100)}`));
    else if (path === '/big') xml(200, envelope(`<R><v>${'x'.repeat(10_000)}</v></R>`));
    else if (path === '/text') xml(500, 'java.lang.NullPointerException at internal.Secret', 'text/plain');
    else if (path === '/broken') xml(200, '<soap:Envelope><soap:Body><R></soap:Body>');
    else if (path === '/nofault') xml(500, envelope('<R><v>odd</v></R>'));
    else if (path === '/oneway') res.writeHead(202).end();
    else if (path === '/entity-in-text') xml(200, envelope('<R><v>a &lt;b&gt; &amp; &#65;</v></R>'));
    else if (path === '/malformed') {
      // The answer the client names in X-Case: a 200 whose body is not well-formed XML (or is, for the controls).
      const body = MALFORMED[String(req.headers['x-case'])] ?? WELL_FORMED[String(req.headers['x-case'])];
      res.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' }).end(body);
    } else return false;
    return true;
  });
  const dead = `http://127.0.0.1:${await freePort()}`;
  const snapshot = snapshotOf([
    withService(
      gatewayRoute('orders', [
        soapRule('declared', { path: '/ws/orders', elements: ORDER_ELEMENTS }),
        soapRule('generic', { path: '/ws/orders' }),
        soapRule('v12', { version: '1.2', path: '/ws/orders12', elements: ORDER_ELEMENTS }),
        soapRule('by-path', {
          path: '/ws/orders',
          pattern: '/by-path/{customer}',
          elements: [
            { path: 'customer', value: '{{ path.customer }}' },
            { path: 'note', value: 'from {{ query.note }} & co' },
          ],
        }),
        soapRule('secure', { path: '/ws/orders', elements: ORDER_ELEMENTS }, { plugins: [{ name: 'jwt' }] }),
        soapRule(
          'shaped',
          { path: '/ws/orders', elements: ORDER_ELEMENTS },
          { plugins: [{ name: 'add-note' }, { name: 'one-a-minute' }] },
        ),
        soapRule(
          'cached',
          { path: '/ws/orders', elements: ORDER_ELEMENTS },
          { plugins: [{ name: 'cache' }] },
        ),
        soapRule(
          'keyed',
          { path: '/ws/orders', elements: ORDER_ELEMENTS },
          { plugins: [{ name: 'jwt' }, { name: 'idempotency' }] },
        ),
      ]),
      { url: svc.url, timeouts: { response: '500ms' } },
    ),
    withService(
      gatewayRoute('evil', [
        ...[
          'xxe',
          'laughs',
          'deep',
          'big',
          'text',
          'broken',
          'nofault',
          'entity-in-text',
          'oneway',
          'malformed',
        ].map((p) => soapRule(p, { path: `/${p}`, maxDepth: 32, maxResponseBytes: 4096 })),
      ]),
      { url: evil.url },
    ),
    withService(gatewayRoute('down', [soapRule('down', {})]), {
      url: dead,
      circuitBreaker: { minRequests: 2, errorPercent: 50, window: '10s', openFor: '30s' },
    }),
    ...hsJwtResources('test', 'orders'),
    {
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'GatewayPlugin',
      metadata: { name: 'cache', namespace: 'test', generation: 1 },
      spec: { plugin: 'proxy-cache', proxyCache: { methods: ['GET', 'HEAD', 'POST'] } },
    },
    {
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'GatewayPlugin',
      metadata: { name: 'add-note', namespace: 'test', generation: 1 },
      spec: {
        plugin: 'request-transformer',
        requestTransformer: { add: { body: ['note:added by {{ header.x-tenant }}'] } },
      },
    },
    {
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'GatewayPlugin',
      metadata: { name: 'one-a-minute', namespace: 'test', generation: 1 },
      spec: { plugin: 'rate-limiting', rateLimiting: { minute: 1, policy: 'local', limitBy: 'ip' } },
    },
    {
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'GatewayPlugin',
      metadata: { name: 'idempotency', namespace: 'test', generation: 1 },
      spec: { plugin: 'idempotency', idempotency: {} },
    },
  ]);
  dp = await startTestDataPlane({ initialSnapshot: snapshot });
});

afterAll(async () => {
  await dp?.close();
  await svc?.close();
  await evil?.close();
});

async function post(path: string, body: unknown, headers: Record<string, string> = {}, method = 'POST') {
  const r = await request(`${dp.proxyUrl}${path}`, {
    method: method as 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.body.text();
  return { status: r.statusCode, headers: r.headers, text, json: text ? JSON.parse(text) : undefined };
}

const token = () => hsJwt('orders');

describe('soap: a JSON request becomes a SOAP call, its answer JSON', () => {
  it('SOAP 1.1 with declared elements: text/xml, the SOAPAction, the client headers, the envelope; the answer as JSON', async () => {
    const before = svc.received.length;
    const r = await post(
      '/declared',
      { customer: 'alice', item: { sku: 'A-1', qty: 2 }, note: 'hi' },
      { soapaction: '"urn:other"', 'x-custom': 'kept', 'accept-encoding': 'gzip' },
    );
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.json).toEqual({
      CreateOrderResponse: {
        orderId: expect.stringMatching(/^o-\d+$/),
        customer: 'alice',
        note: 'hi',
        line: { sku: 'A-1', qty: '2' },
      },
    });
    const seen = svc.received[before];
    expect(seen.headers['content-type']).toBe('text/xml; charset=utf-8');
    expect(seen.headers.soapaction).toBe(`"${CREATE_ACTION}"`); // the route's, never the client's
    expect(seen.headers['x-custom']).toBe('kept');
    expect(seen.headers['accept-encoding']).toBeUndefined();
    expect(seen.body).toBe(
      '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/">' +
        `<soap:Body><CreateOrder xmlns="${ORDERS_NS}"><customer>alice</customer><item><sku>A-1</sku><qty>2</qty></item>` +
        '<note>hi</note></CreateOrder></soap:Body></soap:Envelope>',
    );
  });

  it('300 concurrent translations: each answer belongs to its own request', async () => {
    const answers = await Promise.all(
      Array.from({ length: 300 }, (_, i) => post(i % 2 ? '/declared' : '/generic', { customer: `c-${i}` })),
    );
    answers.forEach((r, i) => {
      expect(r.status).toBe(200);
      expect(r.json.CreateOrderResponse.customer).toBe(`c-${i}`);
    });
  });

  it('the generic mapping: members become elements, an array repeats its element; repeated answers are arrays', async () => {
    const r = await post('/generic', {
      customer: 'bob',
      item: [
        { sku: 'A', qty: 1 },
        { sku: 'B', qty: 3 },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.json.CreateOrderResponse).toMatchObject({
      customer: 'bob',
      line: [
        { sku: 'A', qty: '1' },
        { sku: 'B', qty: '3' },
      ],
    });
    expect(svc.received.at(-1)?.body).toContain(
      '<item><sku>A</sku><qty>1</qty></item><item><sku>B</sku><qty>3</qty></item>',
    );
  });

  it('SOAP 1.2: application/soap+xml with the action parameter, the 1.2 envelope', async () => {
    const r = await post('/v12', { customer: 'carol', item: { sku: 'C', qty: 1 } });
    expect(r.status).toBe(200);
    expect(r.json.CreateOrderResponse).toMatchObject({ customer: 'carol', line: { sku: 'C', qty: '1' } });
    const seen = svc.received.at(-1)!;
    expect(seen.headers['content-type']).toBe(
      `application/soap+xml; charset=utf-8; action="${CREATE_ACTION}"`,
    );
    expect(seen.headers.soapaction).toBeUndefined();
    expect(seen.body).toContain('xmlns:soap="http://www.w3.org/2003/05/soap-envelope"');
  });

  it('values from path parameters and the query; literal text of the config escaped too', async () => {
    const r = await post('/by-path/dave?note=%3Cweb%3E', '');
    expect(r.status).toBe(200);
    expect(r.json.CreateOrderResponse).toMatchObject({ customer: 'dave', note: 'from <web> & co' });
    expect(svc.received.at(-1)?.body).toContain('<note>from &lt;web&gt; &amp; co</note>');
  });

  it('an injection attempt in a request field arrives as that literal text, never as structure', async () => {
    const attack = '</customer><evil/><customer>x';
    for (const path of ['/declared', '/generic']) {
      const r = await post(path, { customer: attack, note: `"'&<![CDATA[x]]>` });
      expect(r.status).toBe(200);
      // The service parsed one customer element holding the whole string.
      expect(r.json.CreateOrderResponse).toMatchObject({ customer: attack, note: `"'&<![CDATA[x]]>` });
      const raw = svc.received.at(-1)!.body;
      expect(raw).toContain('<customer>&lt;/customer&gt;&lt;evil/&gt;&lt;customer&gt;x</customer>');
      expect(raw).not.toContain('<evil/>');
    }
  });
});

describe('soap: faults', () => {
  it('a SOAP 1.1 client fault is 422 with the fault code and string, never the XML or its detail', async () => {
    const r = await post('/declared', { customer: 'bad' });
    expect(r.status).toBe(422);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.json).toMatchObject({
      code: 'SLC_ERR_SOAP_CLIENT_FAULT',
      status: 422,
      detail: 'unknown customer: bad',
      faultCode: 'soap:Client',
      faultString: 'unknown customer: bad',
    });
    expect(r.json.requestId).toBe(r.headers['x-request-id']);
    expect(r.text).not.toContain('<');
    expect(r.text).not.toContain('internal stack trace');
  });

  it('a SOAP 1.1 server fault is 502', async () => {
    const r = await post('/declared', { customer: 'crash' });
    expect(r.status).toBe(502);
    expect(r.json).toMatchObject({
      code: 'SLC_ERR_SOAP_SERVER_FAULT',
      faultCode: 'soap:Server',
      faultString: 'database down',
    });
  });

  it('SOAP 1.2 faults: Sender is 422, Receiver 502, with Code/Value and Reason/Text', async () => {
    const sender = await post('/v12', { customer: 'bad' });
    expect(sender.status).toBe(422);
    expect(sender.json).toMatchObject({
      code: 'SLC_ERR_SOAP_CLIENT_FAULT',
      faultCode: 'soap:Sender',
      faultString: 'unknown customer: bad',
    });
    const receiver = await post('/v12', { customer: 'crash' });
    expect(receiver.status).toBe(502);
    expect(receiver.json).toMatchObject({ code: 'SLC_ERR_SOAP_SERVER_FAULT', faultCode: 'soap:Receiver' });
  });
});

describe('soap: the request refused before any call', () => {
  it('malformed JSON, a body that is not JSON, a non-object for the mapping, a bad element name: 400, no call', async () => {
    const before = svc.received.length;
    const cases: [string, string, Record<string, string>?][] = [
      ['/declared', '{"customer":'],
      ['/declared', 'customer=alice', { 'content-type': 'application/x-www-form-urlencoded' }],
      ['/generic', '[1,2]'],
      ['/generic', '{"bad name":1}'],
      ['/generic', '{"a":[[1]]}'],
      ['/declared', '{"customer":{"nested":true}}'],
      ['/declared', '{"customer":"nul \\u0000 char"}'],
    ];
    for (const [path, body, headers] of cases) {
      const r = await post(path, body, headers);
      expect(r.status, `${path} ${body}`).toBe(400);
      expect(r.json.code).toBe('SLC_ERR_SOAP_BAD_REQUEST');
    }
    expect(svc.received.length).toBe(before);
  });

  it('a JSON body nested past maxDepth is refused, not mapped', async () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 100; i++) deep = { a: deep };
    const r = await post('/generic', { customer: 'deep', deep });
    expect(r.status).toBe(400);
    expect(r.json.detail).toMatch(/deeper than 64/);
  });

  it('POST only: another method is 405 without a call', async () => {
    const before = svc.received.length;
    const r = await post('/declared', { customer: 'x' }, {}, 'PUT');
    expect(r.status).toBe(405);
    expect(svc.received.length).toBe(before);
  });
});

describe('soap: hostile or broken answers', () => {
  it('an XXE payload is refused as a 502; nothing is resolved', async () => {
    const r = await post('/xxe', { v: 1 });
    expect(r.status).toBe(502);
    expect(r.json.code).toBe('SLC_ERR_SOAP_DTD_REFUSED');
    expect(r.text).not.toContain('root:');
  });

  it('billion laughs is refused as a 502 and the process stays up', async () => {
    const heap = process.memoryUsage().heapUsed;
    const r = await post('/laughs', { v: 1 });
    expect(r.status).toBe(502);
    expect(r.json.code).toBe('SLC_ERR_SOAP_DTD_REFUSED');
    expect(r.text).not.toContain('lollol');
    expect(process.memoryUsage().heapUsed - heap).toBeLessThan(50 * 1024 * 1024);
    const after = await post('/declared', { customer: 'still-up' });
    expect(after.status).toBe(200);
  });

  it('depth and size bounds: deeper than maxDepth or larger than maxResponseBytes is a 502', async () => {
    const deep = await post('/deep', {});
    expect(deep.status).toBe(502);
    expect(deep.json).toMatchObject({ code: 'SLC_ERR_SOAP_TOO_LARGE' });
    expect(deep.json.detail).toMatch(/deeper than 32/);
    const big = await post('/big', {});
    expect(big.status).toBe(502);
    expect(big.json.code).toBe('SLC_ERR_SOAP_TOO_LARGE');
    expect(big.json.detail).toMatch(/larger than 4096 bytes/);
  });

  it('not XML, broken XML, an error status without a Fault: 502, never the upstream body', async () => {
    for (const path of ['/text', '/broken', '/nofault']) {
      const r = await post(path, {});
      expect(r.status, path).toBe(502);
      expect(r.json.code, path).toBe('SLC_ERR_SOAP_BAD_RESPONSE');
      expect(r.text).not.toContain('NullPointer');
      expect(r.text).not.toContain('odd');
    }
  });

  it.each(Object.keys(MALFORMED))(
    'a 200 that is not well-formed XML is a 502, never a 200: %s',
    async (name) => {
      const r = await post('/malformed', {}, { 'x-case': name });
      expect(r.status).toBe(502);
      expect(r.headers['content-type']).toBe('application/problem+json');
      expect(r.json.code).toBe('SLC_ERR_SOAP_BAD_RESPONSE');
      expect(r.json.detail).toMatch(/^the SOAP response is not (well-formed XML|UTF-8)/);
      expect(r.text).not.toMatch(/foo|nbsp|trailing|more/);
    },
  );

  it.each(Object.keys(WELL_FORMED))('a well-formed answer near those is translated: %s', async (name) => {
    const r = await post('/malformed', {}, { 'x-case': name });
    expect(r.status).toBe(200);
  });

  it('a one-way answer (202, no body) is an empty JSON object', async () => {
    const r = await post('/oneway', {});
    expect(r.status).toBe(200);
    expect(r.json).toEqual({});
  });

  it('predefined entities and character references in the answer are decoded', async () => {
    const r = await post('/entity-in-text', {});
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ R: { v: 'a <b> & A' } });
  });
});

describe('soap: plugins in front and the upstream call', () => {
  it('jwt in front: no token is 401 and no call; a valid token gets the translation', async () => {
    const before = svc.received.length;
    const refused = await post('/secure', { customer: 'eve' });
    expect(refused.status).toBe(401);
    expect(svc.received.length).toBe(before);
    const ok = await post('/secure', { customer: 'eve' }, { authorization: `Bearer ${await token()}` });
    expect(ok.status).toBe(200);
    expect(ok.json.CreateOrderResponse.customer).toBe('eve');
  });

  it('a request-transformer and a rate limit in front: the edited body is translated; past the limit, 429 and no call', async () => {
    const r = await post('/shaped', { customer: 'gina' }, { 'x-tenant': '<acme>' });
    expect(r.status).toBe(200);
    expect(r.json.CreateOrderResponse).toMatchObject({ customer: 'gina', note: 'added by <acme>' });
    expect(svc.received.at(-1)?.body).toContain('<note>added by &lt;acme&gt;</note>');
    const before = svc.received.length;
    const limited = await post('/shaped', { customer: 'gina' });
    expect(limited.status).toBe(429);
    expect(svc.received.length).toBe(before);
  });

  it('a cache in front: every POST reaches the service (a translated answer carries no freshness to store)', async () => {
    const executed = svc.executed();
    for (let i = 0; i < 2; i++) {
      const r = await post('/cached', { customer: 'hank' });
      expect(r.status).toBe(200);
      expect(r.json.CreateOrderResponse.customer).toBe('hank');
    }
    expect(svc.executed()).toBe(executed + 2);
  });

  it('idempotency in front: a replayed POST is answered from the record, the service runs once', async () => {
    const headers = {
      authorization: `Bearer ${await token()}`,
      'idempotency-key': `soap-${'k'.repeat(32)}-${Date.now()}`,
    };
    const executed = svc.executed();
    const first = await post('/keyed', { customer: 'frank' }, headers);
    expect(first.status).toBe(200);
    const replay = await post('/keyed', { customer: 'frank' }, headers);
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json).toEqual(first.json);
    expect(svc.executed()).toBe(executed + 1);
  });

  it("a slow service: 504 after the service's response timeout", async () => {
    const started = Date.now();
    const r = await post('/declared', { customer: 'slow' });
    expect(r.status).toBe(504);
    expect(r.json.code).toBe('SLC_ERR_UPSTREAM_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(1800);
  });

  it('a service that is down: 502, then the breaker opens (503) without calling it', async () => {
    const first = await post('/down', {});
    expect(first.status).toBe(502);
    expect(first.json.code).toBe('SLC_ERR_UPSTREAM_UNAVAILABLE');
    await post('/down', {});
    const open = await post('/down', {});
    expect(open.status).toBe(503);
    expect(open.json.code).toBe('SLC_ERR_UPSTREAM_CIRCUIT_OPEN');
  });
});

describe('soap: metrics', () => {
  it('counts each request of a soap route by result', async () => {
    await post('/declared', { customer: 'metric' });
    await post('/declared', { customer: 'bad' });
    await post('/declared', { customer: 'crash' });
    await post('/declared', '{');
    await post('/xxe', {});
    await post('/down', {});
    const text = await dp.metrics.registry.metrics();
    const count = (route: string, result: string) =>
      Number(
        new RegExp(
          `sluice_soap_requests_total\\{route="route/test/${route}/0",result="${result}"\\} (\\d+)`,
        ).exec(text)?.[1] ?? 0,
      );
    for (const result of ['ok', 'client_fault', 'server_fault', 'bad_request'])
      expect(count('orders/declared', result), result).toBeGreaterThan(0);
    expect(count('evil/xxe', 'refused')).toBeGreaterThan(0);
    expect(count('down/down', 'error')).toBeGreaterThan(0);
  });
});
