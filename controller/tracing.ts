/**
 * The controller's spans, through @opentelemetry/api's global tracer only: the controller never
 * imports the data plane's tracing (ARCHITECTURE §2), and until the process entry point
 * (bin/commands/controller.ts) registers a provider, which it does only when OTEL_* configures
 * an exporter, every span here is the API's no-op.
 *
 *  - `controller build`: one per build, with the snapshot hash (`sluice.snapshot.hash`), the
 *    route count and the number of problems found. The pure build() is called inside it,
 *    unchanged.
 *  - `controller push`: one per PUT /config to a pod, with the hash it pushes, the pod, the
 *    HTTP status and the result (applied, unchanged, rejected, error). Pushes run when a pod
 *    needs them (right after a build, or later: a new or restarted pod, a retry), so each is a
 *    trace of its own with a link to the build that made its snapshot, rather than a child that
 *    could outlive its parent by hours.
 */
import { type Link, type Span, type SpanContext, SpanStatusCode, trace } from '@opentelemetry/api';
import { type BuildResult, build } from './build.ts';
import type { ResourceSet } from './source/resource-set.ts';

export const ATTR_SNAPSHOT_HASH = 'sluice.snapshot.hash';

const tracer = trace.getTracer('sluice-controller');

/** build() inside a `controller build` span; the span's context lets the pushes link to it. */
export function tracedBuild(
  resources: ResourceSet,
  opts?: Parameters<typeof build>[1],
): { result: BuildResult; built: SpanContext } {
  const span = tracer.startSpan('controller build');
  try {
    const result = build(resources, opts);
    span.setAttributes({
      [ATTR_SNAPSHOT_HASH]: result.snapshot.hash,
      'sluice.routes': result.snapshot.table.routes.length,
      'sluice.problems': result.diagnostics.length,
    });
    return { result, built: span.spanContext() };
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
    throw err;
  } finally {
    span.end();
  }
}

/** A PUT /config of `hash` to a pod, linked to the build of that snapshot (when known). */
export function startPushSpan(pod: string, url: string, hash: string, built: SpanContext | null): Span {
  const links: Link[] = built === null ? [] : [{ context: built }];
  return tracer.startSpan('controller push', {
    attributes: {
      [ATTR_SNAPSHOT_HASH]: hash,
      'sluice.pod': pod,
      'http.request.method': 'PUT',
      'url.full': url,
    },
    links,
  });
}

/** The push's outcome: applied and unchanged are fine; rejected (422), another status or no answer are errors. */
export function endPushSpan(span: Span, result: string, status: number, err?: Error): void {
  span.setAttribute('sluice.push.result', result);
  if (status !== 0) span.setAttribute('http.response.status_code', status);
  if (result !== 'applied' && result !== 'unchanged')
    span.setStatus({ code: SpanStatusCode.ERROR, message: err?.message ?? result });
  span.end();
}
