import { defineConfig } from 'vitest/config';
import { GatewayApiTally } from './test/gateway-api/tally.ts';

// Tests against a real Kubernetes API server, taken from KUBECONFIG. One file at a time:
// they share the cluster. test/gateway-api: the Gateway API conformance tests, with their
// tally ("GATEWAY-HTTP core: N of M") printed after vitest's own summary.
export default defineConfig({
  test: {
    include: ['test/k8s/**/*.test.ts', 'test/chart/k8s/**/*.test.ts', 'test/gateway-api/**/*.test.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default', new GatewayApiTally()],
  },
});
