/**
 * Custom resources → snapshot through the real controller (validate, compile), for the handler
 * kinds' tests (aggregate, soap, grpc).
 */
import { expect } from 'vitest';
import type { Resource } from '../../controller/api/index.ts';
import { build } from '../../controller/build.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';
import type { Snapshot } from '../../dataplane/config/route-table.ts';
import { validateRouteTable } from '../../dataplane/config/validate.ts';

export function snapshotOf(objects: unknown[]): Snapshot {
  const result = build(resourceSetFrom(objects as Resource[]));
  expect(result.diagnostics).toEqual([]);
  expect(validateRouteTable(result.snapshot.table)).toEqual([]);
  return result.snapshot;
}

/** A GatewayRoute in namespace test with these route rules (each may carry `aggregate`). */
export function gatewayRoute(name: string, routes: Record<string, unknown>[], plugins?: string[]) {
  return {
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'GatewayRoute',
    metadata: { name, namespace: 'test', generation: 1 },
    spec: {
      service: { name, url: 'http://127.0.0.1:9' },
      ...(plugins && { plugins: plugins.map((p) => ({ name: p })) }),
      routes,
    },
  };
}
