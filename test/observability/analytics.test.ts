/**
 * API analytics: per-consumer metrics with a bounded consumer label. With --analytics-consumers 3
 * and eight consumers calling, /metrics names exactly three of them and counts the other five as
 * `other` (nothing lost: the per-consumer counts add up to the route's), anonymous calls are
 * `(none)`; errors, bytes, idempotency outcomes and rate-limit refusals are by consumer too. Off by
 * default: a data plane without the flag exports none of these series.
 */
import { createHash } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPlane } from '../../dataplane/main.ts';
import { startTestDataPlane, startUpstream, type Upstream } from '../helpers/servers.ts';
import {
  idempotencyPlugin,
  pluginInstance,
  rateLimitPlugin,
  route,
  snapshot,
  upstream,
} from '../helpers/tables.ts';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const NAMES = ['c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8'];
const keyAuth = pluginInstance('keys', 'key-auth', {
  consumers: NAMES.map((n) => ({ name: n, secretKeyRef: { name: 'k', key: n }, sha256: sha(`key-${n}`) })),
});

let up: Upstream;
let dp: DataPlane;
let plain: DataPlane;
const table = () =>
  snapshot(
    [
      route('api', 'u', '/api', {
        plugins: [keyAuth, rateLimitPlugin('rl', { minute: 2, policy: 'local' })],
      }),
      route('pay', 'u', '/pay', { plugins: [keyAuth, idempotencyPlugin('idem')] }),
      route('open', 'u', '/open'),
    ],
    [upstream('u', up.url)],
  );
beforeAll(async () => {
  up = await startUpstream();
  dp = await startTestDataPlane({ analyticsConsumers: 3, initialSnapshot: table() });
  plain = await startTestDataPlane({ initialSnapshot: table() });
});
afterAll(async () => {
  await dp.close();
  await plain.close();
  await up.close();
});

const metrics = async (d: DataPlane) => (await request(`${d.adminUrl}/metrics`)).body.text();
/** `name{labels} value` lines of one metric, as [labels object, value]. */
function samples(text: string, name: string): [Record<string, string>, number][] {
  const out: [Record<string, string>, number][] = [];
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`).exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    out.push([labels, Number(m[2])]);
  }
  return out;
}

describe('consumer analytics', () => {
  it('names at most N consumers, counts the rest as other, and loses no request', async () => {
    for (const n of NAMES) {
      for (let i = 0; i < 3; i++) {
        // The third call of each consumer in the minute is refused (429).
        const r = await request(`${dp.proxyUrl}/api/x`, { headers: { 'x-api-key': `key-${n}` } });
        await r.body.dump();
      }
    }
    await request(`${dp.proxyUrl}/open/x`).then((r) => r.body.dump());
    const text = await metrics(dp);
    const counts = samples(text, 'sluice_consumer_request_duration_seconds_count').filter(
      ([l]) => l.route === 'route/test/api/api/0',
    );
    const consumers = new Set(counts.map(([l]) => l.consumer));
    expect([...consumers].sort()).toEqual(['c1', 'c2', 'c3', 'other']);
    const by = (consumer: string, cls: string) =>
      counts
        .filter(([l]) => l.consumer === consumer && l.status_class === cls)
        .reduce((a, [, v]) => a + v, 0);
    expect(by('c1', '2xx')).toBe(2);
    expect(by('c1', '4xx')).toBe(1);
    expect(by('other', '2xx')).toBe(10);
    expect(by('other', '4xx')).toBe(5);
    // Nothing lost: the consumers' counts add up to the route's request count.
    const total = samples(text, 'sluice_requests_total')
      .filter(([l]) => l.route === 'route/test/api/api/0')
      .reduce((a, [, v]) => a + v, 0);
    expect(counts.reduce((a, [, v]) => a + v, 0)).toBe(total);
    expect(
      samples(text, 'sluice_consumer_request_duration_seconds_count').find(
        ([l]) => l.route === 'route/test/open/open/0',
      )?.[0].consumer,
    ).toBe('(none)');
    const limited = samples(text, 'sluice_consumer_rate_limited_total');
    expect(limited.find(([l]) => l.consumer === 'c2')?.[1]).toBe(1);
    expect(limited.find(([l]) => l.consumer === 'other')?.[1]).toBe(5);
    const out = samples(text, 'sluice_consumer_bytes_total').find(
      ([l]) => l.consumer === 'c1' && l.direction === 'out',
    );
    expect(out?.[1]).toBeGreaterThan(0);
  });

  it('idempotency outcomes by consumer', async () => {
    const post = () =>
      request(`${dp.proxyUrl}/pay`, {
        method: 'POST',
        headers: {
          'x-api-key': 'key-c3',
          'idempotency-key': 'analytics-key-0123456789abcdef0123456789',
          'content-type': 'application/json',
        },
        body: '{}',
      }).then((r) => r.body.dump());
    await post();
    await post();
    const text = await metrics(dp);
    expect(
      samples(text, 'sluice_consumer_idempotency_requests_total')
        .filter(([l]) => l.consumer === 'c3')
        .map(([l, v]) => [l.outcome, v])
        .sort(),
    ).toEqual([
      ['executed', 1],
      ['replayed', 1],
    ]);
  });

  it('is off by default: no consumer series', async () => {
    await request(`${plain.proxyUrl}/api/x`, { headers: { 'x-api-key': 'key-c1' } }).then((r) =>
      r.body.dump(),
    );
    expect(await metrics(plain)).not.toContain('sluice_consumer_');
  });
});
