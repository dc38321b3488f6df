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
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
