/**
 * ClientSignal, the abort signal of a request's client (pipeline/client-signal.ts), on a real
 * node:http server and raw TCP clients: a client that closes its socket before the response
 * ended aborts it (reason CLIENT_CLOSED), each listener still added running once; a response
 * that ended does not, whatever the socket does after; a listener removed never runs; one
 * made after the client left is aborted already; asAbortSignal is a real AbortSignal that
 * follows it (what AbortSignal.any and undici take). End to end (every handler's upstream call
 * cut when its client leaves): cancel.test.ts.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientSignal } from '../../dataplane/pipeline/client-signal.ts';
import { CLIENT_CLOSED } from '../../dataplane/upstream/errors.ts';

let server: Server;
let port: number;
/** The next request's response, as the server gets it. */
let next: ((res: ServerResponse, req: IncomingMessage) => void) | null = null;

beforeAll(async () => {
  server = createServer((req, res) => next?.(res, req));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise((r) => server.close(r)));

/** A raw client that sends one GET and returns its socket with the server's response to it. */
async function request(): Promise<{ socket: Socket; res: ServerResponse }> {
  const got = new Promise<ServerResponse>((resolve) => {
    next = (res) => resolve(res);
  });
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  return { socket, res: await got };
}

describe('ClientSignal', () => {
  it('aborts when the client closes before the response ended: each listener once, a removed one never', async () => {
    const { socket, res } = await request();
    const signal = new ClientSignal(res);
    const calls: string[] = [];
    const a = () => calls.push('a');
    const b = () => calls.push('b');
    const removed = () => calls.push('removed');
    signal.addEventListener('abort', a);
    signal.addEventListener('abort', removed);
    signal.addEventListener('abort', b, { once: true });
    signal.removeEventListener('abort', removed);
    expect(signal.aborted).toBe(false);
    socket.destroy();
    await once(res, 'close');
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(CLIENT_CLOSED);
    expect(calls).toEqual(['a', 'b']);
    // Added after the abort: not run (as an EventTarget does not dispatch a past event again).
    signal.addEventListener('abort', () => calls.push('late'));
    await new Promise((r) => setImmediate(r));
    expect(calls).toEqual(['a', 'b']);
  });

  it('does not abort when the response ended, even as the socket closes after it', async () => {
    const { socket, res } = await request();
    const signal = new ClientSignal(res);
    let called = false;
    signal.addEventListener('abort', () => {
      called = true;
    });
    const closed = once(res, 'close'); // node:http emits it once the response is written, socket open or not
    res.end('done');
    await once(res, 'finish');
    socket.destroy();
    await closed;
    await once(socket, 'close');
    expect(signal.aborted).toBe(false);
    expect(called).toBe(false);
  });

  it('made after the client left: aborted already', async () => {
    const { socket, res } = await request();
    socket.destroy();
    await once(res, 'close');
    const signal = new ClientSignal(res);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(CLIENT_CLOSED);
  });

  it('asAbortSignal: a real AbortSignal that aborts with it, with its reason; one per signal', async () => {
    const { socket, res } = await request();
    const signal = new ClientSignal(res);
    const real = signal.asAbortSignal();
    expect(real).toBeInstanceOf(AbortSignal);
    expect(signal.asAbortSignal()).toBe(real);
    const any = AbortSignal.any([real, AbortSignal.timeout(60_000)]);
    socket.destroy();
    await once(res, 'close');
    expect(real.aborted).toBe(true);
    expect(real.reason).toBe(CLIENT_CLOSED);
    expect(any.aborted).toBe(true);
    // Asked for after the abort: aborted at once.
    const { socket: s2, res: res2 } = await request();
    const late = new ClientSignal(res2);
    s2.destroy();
    await once(res2, 'close');
    expect(late.asAbortSignal().aborted).toBe(true);
  });
});
