/**
 * What broke: test/helpers/free-port.ts, drawing a port another process listened on (RabbitMQ's
 * 25672 on CI's machine, or a server of the other vitest worker), threw that listen's
 * EADDRINUSE out of the test instead of drawing again: it raced events.once('listening') against
 * events.once('error'), and the error escaped. Whatever test was running then failed with
 * "listen EADDRINUSE" (test/cli/sluice-run.test.ts in one CI run). Fixed in free-port.ts: both
 * listeners on the server before listen(). Here its draw is steered, once, onto a port held.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import { afterEach, expect, it, vi } from 'vitest';
import { freePort } from '../helpers/free-port.ts';

let held: Server | null = null;
afterEach(() => {
  vi.restoreAllMocks();
  held?.close();
});

it('a port in use is drawn again, not thrown', async () => {
  // A port of freePort's range (25000-32000) that this test holds.
  let port = 0;
  for (let p = 31_999; p > 25_000 && held === null; p--) {
    const s = createServer().listen(p, '127.0.0.1');
    const ok = await new Promise<boolean>((r) =>
      s.once('listening', () => r(true)).once('error', () => r(false)),
    );
    if (ok) [held, port] = [s, p];
  }
  expect(held).not.toBeNull();
  const random = Math.random;
  // The first draw lands on the port held; later draws are random again.
  vi.spyOn(Math, 'random')
    .mockImplementationOnce(() => (port - 25_000 + 0.5) / 7_000)
    .mockImplementation(random);
  const errors: Error[] = [];
  const record = (e: Error) => errors.push(e);
  process.on('uncaughtException', record);
  try {
    const got = await freePort();
    await new Promise((r) => setImmediate(r));
    expect(got).not.toBe(port);
    expect(errors).toEqual([]);
    // And the port it gave is free.
    const s = createServer().listen(got, '127.0.0.1');
    await once(s, 'listening');
    s.close();
  } finally {
    process.off('uncaughtException', record);
  }
});
