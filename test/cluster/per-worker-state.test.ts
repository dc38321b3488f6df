/**
 * With --workers N and no --redis, the primary refuses a snapshot carrying a plugin whose
 * manifest declares `sharedState` (idempotency: records in memory would be per worker, and a
 * retry on another worker would execute again), naming the route and the plugin's field; a
 * plugin without it (rate-limiting, counted per process) is accepted.
 */
import { describe, expect, it } from 'vitest';
import { perWorkerState } from '../../dataplane/cluster/primary.ts';
import { idempotencyPlugin, rateLimitPlugin, route, snapshot, upstream } from '../helpers/tables.ts';

const u = upstream('upstream/u', 'http://127.0.0.1:1');

describe('perWorkerState', () => {
  it('refuses a route carrying idempotency, naming the route, the field and why', () => {
    const s = snapshot(
      [
        route('a', u.id, '/a', {
          plugins: [rateLimitPlugin('rl', { second: 5 }), idempotencyPlugin('idem')],
        }),
        route('b', u.id, '/b'),
      ],
      [u],
    );
    expect(perWorkerState(s, 4)).toEqual([
      {
        id: 'route/test/a/a/0',
        field: 'plugins[1]',
        message:
          'idempotency records in memory would be per worker (--workers 4): a retry landing on another ' +
          'worker would execute again; give --redis URL, or run one worker',
      },
    ]);
  });

  it('accepts plugins that declare no shared state', () => {
    const s = snapshot([route('a', u.id, '/a', { plugins: [rateLimitPlugin('rl', { second: 5 })] })], [u]);
    expect(perWorkerState(s, 4)).toEqual([]);
  });
});
