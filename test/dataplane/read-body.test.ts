/**
 * readBody, the one bounded read of a request body (the chain's, and callUpstream's for bodies
 * kept for retries), on real request streams of a node:http server fed by a real client: whole
 * in several chunks, over the limit (refused, the stream destroyed), cut by the client before
 * its end, and already read or already destroyed.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readBody } from '../../dataplane/upstream/body.ts';
import { BodyTooLargeError } from '../../dataplane/upstream/errors.ts';

let server: Server;
let port = 0;
let next: (req: IncomingMessage) => void = () => {};

beforeAll(async () => {
  server = createServer((req, res) => {
    next(req);
    req.on('error', () => {});
    res.on('error', () => {});
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});
afterAll(() => {
  server.close();
});

/** Sends `chunks` as a chunked POST, a pause between them; `cut` destroys the client after them. */
function send(chunks: string[], cut = false): Promise<IncomingMessage> {
  const arrived = new Promise<IncomingMessage>((resolve) => {
    next = resolve;
  });
  const client = httpRequest({ port, host: '127.0.0.1', method: 'POST', path: '/' });
  client.on('error', () => {});
  (async () => {
    for (const c of chunks) {
      client.write(c);
      await new Promise((r) => setTimeout(r, 20));
    }
    if (cut) client.destroy();
    else client.end();
  })();
  return arrived;
}

it('reads a body sent in several chunks whole', async () => {
  const req = await send(['{"a":', '1,"b":', '"two"}']);
  expect((await readBody(req, 1024)).toString()).toBe('{"a":1,"b":"two"}');
});

it('refuses a body that grows over the limit, and destroys its stream', async () => {
  const req = await send(['x'.repeat(600), 'y'.repeat(600)]);
  await expect(readBody(req, 1000)).rejects.toBeInstanceOf(BodyTooLargeError);
  expect(req.destroyed).toBe(true);
});

it('a body the client cuts before its end is an error, not a short body', async () => {
  const req = await send(['{"partial":'], true);
  // node:http reports it as an 'aborted' error (ECONNRESET) before the stream closes.
  await expect(readBody(req, 1024)).rejects.toMatchObject({ code: 'ECONNRESET' });
});

it('a stream closed before its end, without an error, is a premature close', async () => {
  const s = new PassThrough({ emitClose: true });
  const read = readBody(s, 1024);
  s.write('{"partial":');
  s.destroy();
  await expect(read).rejects.toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' });
});

it('a stream already read is an empty body; one already destroyed is an error', async () => {
  const ended = new PassThrough();
  ended.end('gone');
  ended.resume();
  await once(ended, 'end');
  expect((await readBody(ended, 10)).length).toBe(0);
  const destroyed = new PassThrough();
  destroyed.destroy();
  await expect(readBody(destroyed, 10)).rejects.toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' });
});

it('a stream error rejects with that error', async () => {
  const s = new PassThrough();
  const read = readBody(s, 10);
  s.destroy(new Error('boom'));
  await expect(read).rejects.toThrow('boom');
});
