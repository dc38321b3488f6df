/**
 * UpstreamRequest.signal, the way a caller withdraws a call it no longer wants (an aggregate call
 * past its time): a call still queued in its pool is never sent, one already aborted is never
 * dispatched, and the sink hears the end once. A real H1Pool of one connection in front of a real
 * upstream makes the queue.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Metrics } from '../../dataplane/observability/metrics.ts';
import { type CallFailure, callUpstream, type ResponseSink } from '../../dataplane/upstream/call.ts';
import { H1Pool } from '../../dataplane/upstream/h1-pool.ts';
import type { UpstreamRuntime } from '../../dataplane/upstream/pools.ts';
import { startUpstream, type Upstream } from '../helpers/servers.ts';

let up: Upstream;
let pool: H1Pool;
let runtime: UpstreamRuntime;
const metrics = new Metrics();

beforeAll(async () => {
  up = await startUpstream((req, res) => {
    if (req.url !== '/hold') return false;
    setTimeout(() => res.writeHead(200, { 'content-length': '2' }).end('ok'), 300);
    return true;
  });
  const url = new URL(up.url);
  pool = new H1Pool({
    host: url.hostname,
    port: Number(url.port),
    hostHeader: url.host,
    connections: 1,
    connectMs: 5_000,
    keepAliveMs: 30_000,
  });
  runtime = {
    id: 'upstream/test/abort',
    basePath: '',
    headersTimeout: 5_000,
    bodyTimeout: 5_000,
    requestMs: 0,
    retry: null,
    breaker: null,
    // Its one endpoint is this pool of one connection.
    pick: () => ({ key: 'abort', seed: 0, inFlight: 0, dispatcher: pool }),
    outcome: () => {},
  } as unknown as UpstreamRuntime;
});
afterAll(async () => {
  await pool?.close();
  await up?.close();
});

/** A sink that keeps the status it was given and how the call ended. */
function sink() {
  const s = { status: 0, ends: [] as (CallFailure | null)[] };
  const out: ResponseSink = {
    response(status) {
      s.status = status;
      return new Writable({ write: (_c, _e, cb) => cb() });
    },
    end(failure) {
      s.ends.push(failure);
    },
  };
  return { s, out };
}

const request = (path: string, signal?: AbortSignal) => ({
  path,
  method: 'GET',
  headers: {},
  body: null,
  keyed: false,
  signal,
});
const until = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
};

it('a call withdrawn while queued behind another is never sent', async () => {
  const first = sink();
  const queued = sink();
  const abort = new AbortController();
  callUpstream(runtime, request('/hold'), first.out, metrics);
  callUpstream(runtime, request('/queued', abort.signal), queued.out, metrics);
  await new Promise((r) => setTimeout(r, 50));
  abort.abort();
  await until(() => first.s.ends.length > 0 && queued.s.ends.length > 0);
  // The connection frees at 300 ms; give a queued request time to go, were it still queued.
  await new Promise((r) => setTimeout(r, 200));
  expect(first.s).toEqual({ status: 200, ends: [null] });
  // A withdrawn call is not told whether it had left: `sent` stays the cautious true.
  expect(queued.s).toEqual({ status: 0, ends: [{ code: 'SLC_ERR_UPSTREAM_TIMEOUT', sent: true }] });
  expect(up.seen.map((s) => s.url)).toEqual(['/hold']);
});

it('a call whose caller gave up before it started is not dispatched', async () => {
  const before = up.seen.length;
  const gone = sink();
  callUpstream(runtime, request('/never', AbortSignal.abort()), gone.out, metrics);
  await new Promise((r) => setTimeout(r, 100));
  expect(gone.s).toEqual({ status: 0, ends: [{ code: 'SLC_ERR_UPSTREAM_TIMEOUT', sent: false }] });
  expect(up.seen.length).toBe(before);
});
