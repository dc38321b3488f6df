/**
 * The respond handler kind: a route that answers by itself, on a real data plane with real
 * clients: the problem of a Gateway API rule with no valid backend (500 SLC_ERR_BACKEND_INVALID,
 * RFC 9457), or an empty answer of any status; no upstream is ever called.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RespondHandler } from '../../dataplane/handlers/respond/manifest.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { capturedLog, startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import { pluginInstance, route, snapshot, upstream } from '../helpers/tables.ts';

let dp: DataPlane;
let echo: Upstream;
const logged = capturedLog();

const respondRoute = (
  name: string,
  path: string,
  entry: RespondHandler,
  opts: Parameters<typeof route>[3] = {},
) => ({
  ...route(name, 'echo', path, opts),
  handler: entry,
});

beforeAll(async () => {
  echo = await startUpstream();
  dp = await startTestDataPlane({
    accessLog: true,
    log: logged.log,
    initialSnapshot: snapshot(
      [
        respondRoute('invalid', '/invalid', {
          type: 'respond',
          status: 500,
          problem: 'SLC_ERR_BACKEND_INVALID',
        }),
        respondRoute(
          'empty',
          '/empty',
          { type: 'respond', status: 204 },
          {
            plugins: [pluginInstance('tag', 'response-transformer', { add: { headers: ['x-tag:seen'] } })],
          },
        ),
        respondRoute('teapot', '/teapot', { type: 'respond', status: 418 }),
      ],
      [upstream('echo', echo.url)],
    ),
  });
});

afterAll(async () => {
  await dp?.close();
  await echo?.close();
});

const call = async (path: string, opts: Parameters<typeof request>[1] = {}) => {
  const r = await request(`${dp.proxyUrl}${path}`, opts);
  return { status: r.statusCode, headers: r.headers, body: await r.body.text() };
};

describe('respond', () => {
  it('answers 500 SLC_ERR_BACKEND_INVALID as problem+json with the request id, calling nothing', async () => {
    const r = await call('/invalid/x', { method: 'POST', body: '{"a":1}' });
    expect(r.status).toBe(500);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(r.body)).toEqual({
      type: 'https://sluice.dev/problems/slc_err_backend_invalid',
      title: "The route's backend is not valid: see the route's status",
      status: 500,
      code: 'SLC_ERR_BACKEND_INVALID',
      requestId: r.headers['x-request-id'],
    });
    expect(echo.seen).toHaveLength(0);
  });

  it("the problem's code is the access log's error, like any gateway error", async () => {
    await call('/invalid/logged');
    const line = logged
      .text()
      .split('\n')
      .filter((l) => l.includes('/invalid/logged'))
      .map((l) => JSON.parse(l))[0];
    expect(line).toMatchObject({
      status: 500,
      route: 'route/test/invalid/invalid/0',
      error: 'SLC_ERR_BACKEND_INVALID',
    });
  });

  it('without a problem: the status, an empty body, and response plugins applied', async () => {
    const r = await call('/empty');
    expect(r.status).toBe(204);
    expect(r.body).toBe('');
    expect(r.headers['content-length']).toBeUndefined();
    expect(r.headers['x-tag']).toBe('seen');
    const t = await call('/teapot');
    expect(t.status).toBe(418);
    expect(t.headers['content-length']).toBe('0');
    expect(echo.seen).toHaveLength(0);
  });
});
