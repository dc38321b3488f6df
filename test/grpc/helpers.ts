/** GatewayRoutes with grpc rules, compiled by the real controller, and an HTTP client for the tests. */
import { request } from 'undici';
import { expect } from 'vitest';
import type { Resource } from '../../controller/api/index.ts';
import { build } from '../../controller/build.ts';
import { resourceSetFrom } from '../../controller/source/resource-set.ts';
import type { Snapshot } from '../../dataplane/config/route-table.ts';
import { validateRouteTable } from '../../dataplane/config/validate.ts';
import { CATALOG_PROTO } from './catalog.proto.ts';

export const PROTOS = [{ name: 'shop/v1/catalog.proto', content: CATALOG_PROTO }];

export function snapshotOf(objects: unknown[]): Snapshot {
  const result = build(resourceSetFrom(objects as Resource[]));
  expect(result.diagnostics).toEqual([]);
  expect(validateRouteTable(result.snapshot.table)).toEqual([]);
  return result.snapshot;
}

/** A GatewayRoute in namespace test whose service is `url`, with these rules. */
export function gatewayRoute(
  name: string,
  url: string,
  routes: Record<string, unknown>[],
  service: Record<string, unknown> = {},
) {
  return {
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'GatewayRoute',
    metadata: { name, namespace: 'test', generation: 1 },
    spec: { service: { name, url, ...service }, routes },
  };
}

/** A rule at `path` calling shop.v1.Catalog/<method>, more grpc settings in `grpc`. */
export const rule = (
  name: string,
  path: string,
  method: string,
  grpc: Record<string, unknown> = {},
  extra = {},
) => ({
  name,
  paths: [path],
  grpc: { protos: PROTOS, service: 'shop.v1.Catalog', method, ...grpc },
  ...extra,
});

export async function call(
  base: string,
  path: string,
  opts: { method?: 'GET' | 'POST' | 'PUT' | 'DELETE'; headers?: Record<string, string>; body?: string } = {},
) {
  const r = await request(`${base}${path}`, {
    method: opts.method ?? 'GET',
    headers: { ...(opts.body !== undefined && { 'content-type': 'application/json' }), ...opts.headers },
    body: opts.body,
  });
  const text = await r.body.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: r.statusCode, headers: r.headers, text, json: json as Record<string, unknown> };
}
