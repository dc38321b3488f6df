import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // test/chart/k8s and test/gateway-api need an API server: vitest.k8s.config.ts; test/reliability is `make reliability`.
    exclude: [
      'test/k8s/**',
      'test/chart/k8s/**',
      'test/gateway-api/**',
      'test/reliability/**',
      '**/node_modules/**',
    ],
    // A Redis for the tests: the configured one, else a private redis-server (global-redis.ts).
    globalSetup: ['test/helpers/global-redis.ts'],
    pool: 'forks',
    // Two files at once even on 2 cores, where vitest's default (cores - 1) runs one: most tests
    // wait on sockets, processes and timers, not on the CPU. Measured on a 2-core VM (2026-11-27):
    // the suite in 628 s with one worker, 407 s with two, all passing.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
