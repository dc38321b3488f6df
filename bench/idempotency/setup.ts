/** bench/idempotency.ts's settings, scenarios and keys: one run's, shared by its parts. */
import { randomBytes } from 'node:crypto';
import { POST_PATH } from '../fixtures.ts';
import { envInt } from '../lib/env.ts';
import { onPath } from '../lib/machine.ts';

export const PORT = 18205; // the proxy; PORTS (fixtures.ts) holds 18200–18204 and 18211
export const ADMIN = 18212;
export const REDIS_URL = 'redis://127.0.0.1:6379';
export const REPLAY_KEYS = 1000;
export const opts = {
  duration: envInt('BENCH_DURATION', 10, 1),
  warmup: envInt('BENCH_WARMUP', 3, 0),
  connections: envInt('BENCH_CONNECTIONS', 50, 1),
  rounds: envInt('BENCH_ROUNDS', 3, 1),
  loadgen: process.env.BENCH_LOADGEN || (onPath('wrk') ? 'wrk' : 'undici'),
};
export const RUN = randomBytes(6).toString('hex');
export const PREFIX = `bench-idem-${RUN}:`;
export const HEADERS = {
  'content-type': 'application/json',
  authorization: 'Bearer bench',
  'user-agent': 'bench',
};
export const withKey = (key: string | null) => (key ? { ...HEADERS, 'idempotency-key': key } : HEADERS);

export type Scenario = { name: string; path: string; keys: 'none' | 'fresh' | 'replay' };
export const SCENARIOS: Scenario[] = [
  { name: 'plain-post', path: POST_PATH, keys: 'none' },
  { name: 'idem-first', path: `/idem${POST_PATH}`, keys: 'fresh' },
  { name: 'idem-replay', path: `/idem${POST_PATH}`, keys: 'replay' },
];
// Keys of 40 characters. Fresh ones carry the load run's number: unique across warm-ups and runs.
export const replayKey = (i: number) => `replay-${RUN}-${String(i % REPLAY_KEYS).padStart(20, '0')}`;
