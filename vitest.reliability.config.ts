import { defineConfig } from 'vitest/config';

/** `make reliability`: failure tests too slow for `make test` (a Redis Cluster master killed under load). */
export default defineConfig({
  test: {
    include: ['test/reliability/**/*.test.ts'],
    globalSetup: ['test/helpers/global-redis.ts'],
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
