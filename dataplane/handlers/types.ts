/**
 * What a terminal handler kind does, beside its manifest: `create` once per snapshot, `bind`
 * once per route (its upstreams resolved, its settings compiled), `close` when the snapshot is
 * retired. Every kind makes its upstream calls through upstream/call.ts.
 */
import type { Static, TSchema } from '@sinclair/typebox';
import type { HandlerManifest } from '../config/manifest.ts';
import type { Route } from '../config/route-table.ts';
import type { BoundHandler, RuntimeDeps } from '../pipeline/route.ts';
import type { MetricSet } from '../observability/metric-set.ts';
import type { UpstreamRuntime } from '../upstream/pools.ts';
import type { PathRewrite } from '../upstream/path.ts';

export interface HandlerDeps extends RuntimeDeps {
  /** The snapshot's upstream by id (validateRouteTable has checked that it exists). */
  upstream(id: string): UpstreamRuntime;
}

export interface LiveHandler<Entry> {
  /** `route` is the table's entry; `entry` its handler field, typed; `rewritePath`, the route's (upstream/path.ts). */
  bind(route: Route, entry: Entry, rewritePath: PathRewrite | null): BoundHandler;
  close?(): void;
}

export interface Handler<Entry> {
  /** Its metrics (metric-set.ts): registered when the data plane starts; `deps.metrics.of(set)` in create. */
  metrics?: readonly MetricSet<unknown>[];
  create(deps: HandlerDeps): LiveHandler<Entry>;
}

export const defineHandler = <S extends TSchema, U extends TSchema>(
  _manifest: HandlerManifest<S, string, U>,
  handler: Handler<Static<S>>,
) => handler;
