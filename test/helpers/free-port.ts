/**
 * A port nobody listens on, for a server a test starts on it later. Drawn at random below the
 * kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768–60999 here), never one this
 * process handed out before, and bound once on 127.0.0.1 to see it is free. Why not listen(0)
 * and close: the kernel hands the port it just freed to the next listen(0), often at once, so two
 * calls in a row gave one port twice (a data plane's admin and TLS ports: EADDRINUSE), and a
 * server on another loopback address listening on port 0 could get a port handed out here.
 * Below the range, no listen(0) of any process lands on it; above 25000, no Gateway listener
 * port of the Gateway API tests (their ranges are in 20000–24999) does either.
 *
 * Each vitest worker draws from its own block of that range (VITEST_POOL_ID: unique among the
 * workers running at once), so two test files running side by side never get one port, which a
 * check on 127.0.0.1 alone cannot rule out for servers on other loopback addresses (beyond four
 * workers, blocks are shared). A second vitest beside the first (scripts/test-k8s.sh) names its
 * block in FREE_PORT_BLOCK.
 */
import { createServer } from 'node:net';

const FIRST = 25_000;
const END = 32_000; // the ephemeral range starts at 32768
const BLOCKS = 4;
const worker = Number(process.env.FREE_PORT_BLOCK || process.env.VITEST_POOL_ID) || 1;
const block = (Math.max(1, worker) - 1) % BLOCKS;
const SIZE = (END - FIRST) / BLOCKS;
const LOW = FIRST + block * SIZE;
const HIGH = LOW + SIZE;
const handedOut = new Set<number>();

export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 100; tries++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (handedOut.has(port)) continue;
    const s = createServer();
    // Both listeners before listen(): a port in use must come back as false. (A race of
    // events.once('listening') and events.once('error') threw the EADDRINUSE out of the test
    // instead, failing whatever test was running: seen in CI on RabbitMQ's 25672.)
    const ok = await new Promise<boolean>((resolve) => {
      s.once('error', () => resolve(false));
      s.once('listening', () => resolve(true));
      s.listen(port, '127.0.0.1');
    });
    if (!ok) continue;
    await new Promise((r) => s.close(r));
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port found in ${LOW}–${HIGH} after 100 tries`);
}
