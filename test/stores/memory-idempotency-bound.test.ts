/**
 * The memory idempotency store stays within its bound (standalone mode and pods without Redis:
 * with the 24 h default TTL, unbounded records grow with the rate of keyed requests until the
 * process runs out of memory). Expired records go first, then the oldest no live execution holds;
 * a live execution's record is never dropped; the estimate is close to what records really take
 * in the heap (measured in a child process with --expose-gc); through the data plane's Stores,
 * evictions are counted on sluice_store_evictions_total and logged at most once a minute.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../dataplane/observability/metrics.ts';
import { RECORDS } from '../../dataplane/plugins/idempotency/store.ts';
import type { StoredResponse } from '../../dataplane/stores/idempotency-store.ts';
import {
  DEFAULT_MAX_BYTES,
  MemoryIdempotencyStore,
} from '../../dataplane/stores/memory-idempotency-store.ts';
import { Stores } from '../../dataplane/stores/open-stores.ts';
import { capturedLog } from '../helpers/servers.ts';

/** A response as the bench's upstream gives: five headers, a 137-byte JSON body. */
const RESPONSE: StoredResponse = {
  status: 201,
  headers: [
    ['content-type', 'application/json'],
    ['cache-control', 'no-store'],
    ['etag', '"a1b2c3d4e5f6"'],
    ['location', '/charges/ch_123456789'],
    ['x-upstream', 'payments-7f9c'],
  ],
  body: Buffer.from(
    JSON.stringify({
      id: 'ch_123456789',
      amount: 1999,
      currency: 'eur',
      status: 'succeeded',
      x: 'y'.repeat(60),
    }),
  ),
  bodyOmitted: false,
};
const FP = 'f'.repeat(64);
const id = (i: number) => i.toString(16).padStart(64, '0');
const owner = (i: number) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;

async function execute(store: MemoryIdempotencyStore, i: number, ttlMs = 86_400_000): Promise<void> {
  expect(
    (await store.claim({ id: id(i), fingerprint: FP, owner: owner(i), ttlMs, leaseMs: 30_000 })).outcome,
  ).toBe('claimed');
  expect(await store.complete(id(i), owner(i), RESPONSE)).toBe(true);
}

describe('memory idempotency store: bounded by bytes', () => {
  it('keeps the newest records within the bound and says how many live ones went', async () => {
    let evicted = 0;
    const store = new MemoryIdempotencyStore({ maxBytes: 400_000, onEvict: (n) => (evicted += n) });
    for (let i = 0; i < 5_000; i++) await execute(store, i);
    expect(store.bytes).toBeLessThanOrEqual(store.maxBytes);
    expect(store.size).toBeLessThan(5_000);
    // Filled to the bound, not emptied below it (a record is ~1.4 kB here).
    expect(store.bytes).toBeGreaterThan(store.maxBytes - 2_000);
    // Every record that went was live (none had expired) and is counted once.
    expect(evicted).toBe(5_000 - store.size);
    // Oldest first: the first records are gone, the last ones replay.
    expect(await store.get(id(0))).toBeNull();
    const last = await store.get(id(4_999));
    expect(last?.state).toBe('COMPLETED');
    expect(last?.response?.body.equals(RESPONSE.body)).toBe(true);
    // The records kept are the newest, in one run: the oldest kept follows the newest dropped.
    const oldestKept = 5_000 - store.size;
    expect(await store.get(id(oldestKept - 1))).toBeNull();
    expect((await store.get(id(oldestKept)))?.state).toBe('COMPLETED');
    await store.close();
  });

  it('never drops a record a live execution holds; expired records go first and are not counted', async () => {
    let now = 1_700_000_000_000;
    let evicted = 0;
    const store = new MemoryIdempotencyStore({
      now: () => now,
      maxBytes: 200_000,
      onEvict: (n) => (evicted += n),
    });
    // The oldest record: an execution still running (its lease renewed by the plugin).
    expect(
      (await store.claim({ id: 'running', fingerprint: FP, owner: 'me', ttlMs: 86_400_000, leaseMs: 60_000 }))
        .outcome,
    ).toBe('claimed');
    // Records with a 1 s TTL, then past it: they are what goes first.
    for (let i = 0; i < 100; i++) await execute(store, i, 1_000);
    now += 2_000;
    const before = store.size;
    for (let i = 1_000; i < 1_300; i++) await execute(store, i);
    expect(store.bytes).toBeLessThanOrEqual(store.maxBytes);
    // 101 + 300 records made, of which 100 expired: the evictions count the live ones only.
    expect(evicted).toBe(before + 300 - 100 - store.size);
    expect(evicted).toBeGreaterThan(0);
    const running = await store.get('running');
    expect(running?.state).toBe('IN_PROGRESS');
    expect(running?.leased).toBe(true);
    expect(await store.complete('running', 'me', RESPONSE)).toBe(true);
    expect((await store.get('running'))?.state).toBe('COMPLETED');
    await store.close();
  });

  it('frees the bytes of records released, expired and swept', async () => {
    let now = 0;
    const store = new MemoryIdempotencyStore({ now: () => now });
    await store.claim({ id: 'a', fingerprint: FP, owner: 'o', ttlMs: 100, leaseMs: 50 });
    await store.claim({ id: 'b', fingerprint: FP, owner: 'o', ttlMs: 100, leaseMs: 50 });
    await store.complete('b', 'o', RESPONSE);
    await store.claim({ id: 'c', fingerprint: FP, owner: 'o', ttlMs: 1_000, leaseMs: 50 });
    await store.release('c', 'o');
    expect(store.size).toBe(2);
    now = 500;
    expect(store.sweep()).toBe(2);
    expect(store.bytes).toBe(0);
    await store.close();
  });

  it("estimates within a factor of 1.5 of what the records take in V8's heap", () => {
    // A child with --expose-gc: the heap and the Buffers' memory after a full collection, before
    // and after 20,000 records, against the store's own estimate.
    const store = join(import.meta.dirname, '../../dataplane/stores/memory-idempotency-store.ts');
    const script = `
      const { MemoryIdempotencyStore } = await import(${JSON.stringify(store)});
      const response = ${JSON.stringify({ ...RESPONSE, body: RESPONSE.body.toString() })};
      response.body = Buffer.from(response.body);
      const used = () => { gc(); gc(); const m = process.memoryUsage(); return m.heapUsed + m.arrayBuffers; };
      const s = new MemoryIdempotencyStore({ maxBytes: 1e12 });
      const before = used();
      for (let i = 0; i < 20000; i++) {
        const id = i.toString(16).padStart(64, '0');
        const owner = '00000000-0000-4000-8000-' + i.toString(16).padStart(12, '0');
        await s.claim({ id, fingerprint: 'f'.repeat(63) + (i % 10), owner, ttlMs: 1e9, leaseMs: 1e4 });
        await s.complete(id, owner, response);
      }
      console.log(JSON.stringify({ measured: used() - before, estimated: s.bytes }));
      await s.close();`;
    const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    const { measured, estimated } = JSON.parse(r.stdout);
    process.stderr.write(
      `memory idempotency record: estimated ${estimated / 20_000} bytes, measured ${measured / 20_000}\n`,
    );
    expect(estimated / measured).toBeGreaterThan(1 / 1.5);
    expect(estimated / measured).toBeLessThan(1.5);
  });

  it("through the data plane's stores: counted on sluice_store_evictions_total, logged once a minute", async () => {
    const metrics = new Metrics({ processMetrics: false });
    const { log, lines } = capturedLog();
    const stores = new Stores(null, metrics, log);
    const store = stores.of(RECORDS) as MemoryIdempotencyStore;
    expect(store.maxBytes).toBe(DEFAULT_MAX_BYTES);
    // Past the default bound (64 MiB at ~1 KB a record): ~70,000 records.
    let i = 0;
    while (store.bytes + 2_000 < store.maxBytes) await execute(store, i++);
    const made = i + 5_000;
    for (; i < made; i++) await execute(store, i);
    const evicted = made - store.size;
    expect(evicted).toBeGreaterThan(0);
    const text = await metrics.registry.metrics();
    expect(text).toContain(`sluice_store_evictions_total{store="idempotency"} ${evicted}`);
    // One line for the first evictions; the rest within the minute are counted, not logged.
    const warned = lines().filter((l) => String(l.msg).startsWith('memory store full'));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ store: 'idempotency' });
    expect(warned[0].evicted).toBeGreaterThan(0);
    await stores.close();
  }, 60_000);
});
