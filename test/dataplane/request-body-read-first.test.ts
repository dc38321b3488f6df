/**
 * A request body of known length up to 16 KiB is read whole before the upstream is asked
 * (upstream/call.ts, as nginx's proxy_request_buffering): a client slow to send it holds no
 * upstream request meanwhile, and the upstream gets it whole. A larger body streams: the upstream
 * has the request while the client is still sending. On loopback, with a real upstream and a raw
 * client socket that pauses in the middle of its body.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane } from '../helpers/servers.ts';
import { route, snapshot, upstream } from '../helpers/tables.ts';
import { waitFor } from '../helpers/until.ts';

let up: Server;
let dp: DataPlane;
/** The requests the upstream has begun to get, and the body lengths it read to the end. */
const begun: IncomingMessage[] = [];
const whole: number[] = [];

beforeAll(async () => {
  up = createServer((req, res) => {
    begun.push(req);
    let n = 0;
    req.on('data', (c: Buffer) => {
      n += c.length;
    });
    req.on('end', () => {
      whole.push(n);
      res.end(`got ${n}`);
    });
  });
  up.listen(0, '127.0.9.3');
  await once(up, 'listening');
  dp = await startTestDataPlane({
    host: '127.0.9.4',
    initialSnapshot: snapshot(
      [route('body', 'body', '/')],
      [upstream('body', `http://127.0.9.3:${(up.address() as AddressInfo).port}`)],
    ),
  });
});

afterAll(async () => {
  await dp?.close();
  up?.closeAllConnections();
  await new Promise((r) => up?.close(r));
});

/** Sends a POST's head and the first half of a `size`-byte body, then waits for the rest to be asked. */
async function halfSent(size: number): Promise<{ socket: Socket; rest: () => Promise<string> }> {
  const { port, hostname } = new URL(dp.proxyUrl);
  const socket = connect(Number(port), hostname);
  await once(socket, 'connect');
  const half = Math.floor(size / 2);
  socket.write(
    `POST /upload HTTP/1.1\r\nHost: body.test\r\nContent-Length: ${size}\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  socket.write(Buffer.alloc(half, 'a'));
  let answer = '';
  socket.on('data', (c: Buffer) => {
    answer += c.toString('latin1');
  });
  return {
    socket,
    rest: async () => {
      socket.write(Buffer.alloc(size - half, 'b'));
      await waitFor(
        'the answer',
        () => answer,
        (a) => a.endsWith(`got ${size}`),
        5_000,
      );
      socket.destroy();
      return answer;
    },
  };
}

describe('request bodies read first', () => {
  it('a body of 10,000 bytes: the upstream gets nothing until the client sent all of it, then all of it', async () => {
    const before = begun.length;
    const { rest } = await halfSent(10_000);
    await sleep(300);
    expect(begun.length).toBe(before);
    const answer = await rest();
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(begun.length).toBe(before + 1);
    expect(whole.at(-1)).toBe(10_000);
  });

  it('a body of 40,000 bytes streams: the upstream has the request while the client still sends', async () => {
    const before = begun.length;
    const { rest } = await halfSent(40_000);
    await waitFor(
      'the upstream to get the request',
      () => begun.length,
      (n) => n === before + 1,
      5_000,
    );
    expect(whole.length).toBeLessThan(begun.length);
    const answer = await rest();
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(whole.at(-1)).toBe(40_000);
  });
});
