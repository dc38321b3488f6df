import { defineConfig } from 'vitest/config';

/**
 * `make reliability`: failure and abuse tests too slow for `make test` (test/reliability/): a Redis
 * Cluster or Sentinel master killed under load, a rolling restart behind HAProxy, a soak
 * (SOAK_SECONDS, default 900), slowloris, HTTP/2 floods, 2× overload. One file at a time: each
 * measures the machine, and two at once would measure each other.
 */
export default defineConfig({
  test: {
    include: ['test/reliability/**/*.test.ts'],
    globalSetup: ['test/helpers/global-redis.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
