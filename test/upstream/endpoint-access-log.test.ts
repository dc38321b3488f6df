/**
 * The access log's `upstream` of a request through an upstream of endpoints is the endpoint its
 * last try went to (http://127.0.0.2:port), not the url's host, which names no connection: an
 * SRE reading a slow or failed request sees which pod answered.
 */
import { Writable } from 'node:stream';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Upstream } from '../../dataplane/config/route-table.ts';
import type { DataPlane } from '../../dataplane/main.ts';
import { createLogger } from '../../dataplane/observability/log.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';
import { type Backend, endpointOf, startBackend } from './backends.ts';

let a: Backend;
let b: Backend;
let dp: DataPlane;
const text: string[] = [];

beforeAll(async () => {
  [a, b] = await Promise.all([startBackend('a', '127.0.0.1'), startBackend('b', '127.0.0.2')]);
  const sink = new Writable({
    write(chunk, _enc, cb) {
      text.push(chunk.toString());
      cb();
    },
  });
  dp = await startTestDataPlane({ accessLog: true, log: createLogger('info', sink) });
});
afterAll(async () => {
  await dp.close();
  await Promise.all([a.close(), b.close()]);
});

/** The `upstream` field of the access-log lines written so far. */
async function logged(): Promise<unknown[]> {
  await new Promise<void>((r) => dp.log.flush(() => r()));
  return text
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === 'request')
    .map((l) => l.upstream);
}

describe('the access log of an upstream of endpoints', () => {
  it('names the endpoint each request went to', async () => {
    const u: Upstream = {
      ...upstream('svc', 'http://svc.test.invalid:8080'),
      endpoints: [endpointOf(a), endpointOf(b)],
    };
    expect(dp.holder.apply(snapshot([route('svc', 'svc', '/svc')], [u]))).toMatchObject({
      result: 'applied',
    });
    for (let i = 0; i < 4; i++) {
      const res = await request(`${dp.proxyUrl}/svc`);
      expect(res.statusCode).toBe(200);
      await res.body.dump();
    }
    const seen = await logged();
    expect([...seen].sort()).toEqual([a, a, b, b].map((x) => `http://${x.address}:${x.port}`).sort());
    expect(seen).not.toContain('http://svc.test.invalid:8080');
  });
});
