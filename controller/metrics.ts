/** The controller's metrics, on its own registry (served on the controller's /metrics). */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class ControllerMetrics {
  readonly registry = new Registry();
  readonly builds = new Counter({
    name: 'sluice_controller_builds_total',
    help: 'Snapshots built, by result: ok, or with_errors (some objects were refused; the rest is served).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly buildSeconds = new Histogram({
    name: 'sluice_controller_build_seconds',
    help: 'Time of one build(): validate, compile, snapshot.',
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly pushes = new Counter({
    name: 'sluice_controller_pushes_total',
    help:
      'Attempts to bring a data-plane pod to the desired snapshot, by result: applied, unchanged, rejected (422), ' +
      'error (any failure: refused connection, timeout, an error answer, a failed GET /config).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly pushSeconds = new Histogram({
    name: 'sluice_controller_push_seconds',
    help: 'Time of one PUT /config.',
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly pods = new Gauge({
    name: 'sluice_controller_dataplane_pods',
    help:
      'Data-plane pods by state: found (in the EndpointSlices), in_sync (answering, on the desired snapshot), ' +
      'behind (found but not in sync), failing (the last attempt to reach it failed).',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });
  readonly snapshotBytes = new Gauge({
    name: 'sluice_controller_snapshot_bytes',
    help: 'Size of the desired snapshot (JSON).',
    registers: [this.registry],
  });
  readonly snapshotInfo = new Gauge({
    name: 'sluice_controller_snapshot_info',
    help: 'The desired snapshot (value 1), by hash.',
    labelNames: ['hash'] as const,
    registers: [this.registry],
  });
  readonly syncSeconds = new Histogram({
    name: 'sluice_controller_sync_seconds',
    help: 'Time from a resource change to every data-plane pod running the snapshot that contains it.',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly leader = new Gauge({
    name: 'sluice_controller_leader',
    help: '1 while this replica holds the Lease (pushes and writes status), else 0.',
    registers: [this.registry],
  });
  readonly statusWrites = new Counter({
    name: 'sluice_controller_status_writes_total',
    help: 'Status subresource writes, by result (ok, error). Written only when the status changes.',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly gatewayServiceWrites = new Counter({
    name: 'sluice_controller_gateway_service_writes_total',
    help: "Writes of Gateways' Services, by verb (create, update, delete) and result (ok, error). Written only when one differs.",
    labelNames: ['verb', 'result'] as const,
    registers: [this.registry],
  });
  readonly ingressAnnotations = new Gauge({
    name: 'sluice_controller_ingress_annotations_not_honoured',
    help:
      "Sluice's Ingresses carrying an ingress-nginx annotation it does not act on, by annotation and reason: " +
      'AnnotationNotHonoured, SnippetNotExecuted (a *-snippet: never run), InvalidAnnotation (a value that cannot be read). ' +
      'Each also gets a Warning Event on the Ingress.',
    labelNames: ['annotation', 'reason'] as const,
    registers: [this.registry],
  });
  readonly watchErrors = new Counter({
    name: 'sluice_controller_watch_errors_total',
    help: 'List or watch failures (retried with backoff), by resource.',
    labelNames: ['resource'] as const,
    registers: [this.registry],
  });
  readonly relists = new Counter({
    name: 'sluice_controller_relists_total',
    help: 'Full lists, by resource: the first one, then one per 410 Gone or error.',
    labelNames: ['resource'] as const,
    registers: [this.registry],
  });

  constructor() {
    // Unprefixed: the standard names stock Node.js dashboards query (a scrape's job and
    // instance labels tell the controller from a data plane).
    collectDefaultMetrics({ register: this.registry });
    this.leader.set(0);
  }
}
