import { defineConfig } from 'vitest/config';

// Tests against a real Kubernetes API server, taken from KUBECONFIG. One file at a time:
// they share the cluster.
export default defineConfig({
  test: {
    include: ['test/k8s/**/*.test.ts', 'test/chart/k8s/**/*.test.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
