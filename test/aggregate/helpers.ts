/**
 * Custom resources → snapshot through the real controller (validate, compile), for the handler
 * kinds' tests (aggregate, soap).
 */
import { SignJWT } from 'jose';
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

const HS_SECRET = 'a-shared-secret-of-32-bytes-or-more!!';

/**
 * A jwt GatewayPlugin named "jwt" in namespace test (issuer test-issuer, HS256, the key in a
 * Secret) for `audience`, and a token it accepts.
 */
export function jwtPlugin(audience: string) {
  return {
    objects: [
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'jwt-key', namespace: 'test' },
        stringData: { k: HS_SECRET },
      },
      {
        apiVersion: 'sluice.dev/v1alpha1',
        kind: 'GatewayPlugin',
        metadata: { name: 'jwt', namespace: 'test', generation: 1 },
        spec: {
          plugin: 'jwt',
          config: {
            issuers: [
              {
                issuer: 'test-issuer',
                audiences: [audience],
                algorithms: ['HS256'],
                keys: [{ secretKeyRef: { name: 'jwt-key', key: 'k' } }],
              },
            ],
          },
        },
      },
    ],
    token: (sub = 'alice') =>
      new SignJWT({ iss: 'test-issuer', aud: audience, sub })
        .setProtectedHeader({ alg: 'HS256' })
        .setExpirationTime('1m')
        .sign(new TextEncoder().encode(HS_SECRET)),
  };
}
