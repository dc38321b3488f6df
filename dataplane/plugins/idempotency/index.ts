/**
 * idempotency: the spec's Idempotency-Key mechanism (§1.6, §2.1, §3, §4.2, §4.3, §7, §8), just
 * before the upstream. Per request with a key, in the spec's order (§4.2):
 *   validate the key (400) and find the caller (401) → read the body and fingerprint it →
 *   claim the record (one store round trip) →
 *     claimed / taken over: execute, record the response, COMPLETED
 *     found, other fingerprint: 422, nothing runs (in any state)
 *     found, COMPLETED: replay the stored response, the upstream is not called
 *     found, IN_PROGRESS: 409 with Retry-After; or wait for it (inProgress.mode wait); or,
 *       for an asynchronous route, 202 again.
 * Concurrent requests with one key race on the atomic claim: exactly one executes, the others
 * read what it wrote (§4.2 rule 6). Anything the gateway answers before the claim leaves no
 * record. The store failing means 503: never an execution without a record.
 */
import { randomUUID } from '../../observability/uuid.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { answerProblem } from '../../pipeline/answer.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import type { RuntimeDeps } from '../../pipeline/route.ts';
import {
  type ClaimResult,
  type IdempotencyStore,
  StoreUnavailableError,
} from '../../stores/idempotency-store.ts';
import { traced } from '../../observability/tracing.ts';
import { StoreHealth } from '../../stores/store-health.ts';
import { definePlugin } from '../types.ts';
import { manifest } from './manifest.ts';
import { Execution, keepTrying } from './execution.ts';
import { Fingerprints } from './fingerprint.ts';
import { Leases } from './leases.ts';
import { readIdempotencyKey } from './key.ts';
import { lookupOperation, runInBackground } from './operations.ts';
import { RecordResponse } from './record-response.ts';
import { accepted, replay } from './replay.ts';
import { callerScope, recordId } from './scope.ts';
import { IDEMPOTENCY_METRICS, type IdempotencyMetrics } from './metrics.ts';
import { compileSettings, type Settings } from './settings.ts';
import { RECORDS } from './store.ts';

const CLAIM_SPAN = { 'sluice.store': 'idempotency', 'db.operation.name': 'claim' };

export default definePlugin(manifest, {
  metrics: [IDEMPOTENCY_METRICS],
  stores: [RECORDS],
  create(config, deps) {
    const s = compileSettings(config);
    const store = deps.stores.of(RECORDS);
    const m = deps.metrics.of(IDEMPOTENCY_METRICS);
    // Store failures logged once per change of state, not per request (the metric counts each).
    const health = new StoreHealth('idempotency store');
    const fingerprints = new Fingerprints();
    const leases = new Leases(s.leaseMs);
    const hooks = {
      onRequest(ctx: RequestContext) {
        if (!s.methods.has(ctx.method)) {
          const lookup = s.operationsPrefix !== null && (ctx.method === 'GET' || ctx.method === 'HEAD');
          return lookup && ctx.path.startsWith(s.operationsPrefix!)
            ? lookupOperation(ctx, s, store)
            : undefined;
        }
        const k = readIdempotencyKey(ctx.req.rawHeaders, s.minKey, s.maxKey);
        if ('missing' in k) {
          if (!s.required) return;
          m.request(ctx, 'rejected_key');
          return answerProblem(ctx, 'SLC_ERR_IDEMPOTENCY_KEY_MISSING');
        }
        if ('error' in k) {
          m.request(ctx, 'rejected_key');
          return answerProblem(ctx, 'SLC_ERR_IDEMPOTENCY_KEY_INVALID', { detail: k.error });
        }
        const scope = callerScope(ctx);
        if (scope === null) {
          m.request(ctx, 'rejected_key');
          return answerProblem(ctx, 'SLC_ERR_IDENTITY_REQUIRED', {
            detail: 'requests with an Idempotency-Key must identify their caller (Authorization)',
          });
        }
        return withKey(ctx, s, store, deps, m, health, fingerprints, leases, k.key, scope);
      },
    };
    return { bind: () => hooks };
  },
});

async function withKey(
  ctx: RequestContext,
  s: Settings,
  store: IdempotencyStore,
  deps: RuntimeDeps,
  m: IdempotencyMetrics,
  health: StoreHealth,
  fingerprints: Fingerprints,
  leases: Leases,
  key: string,
  scope: string,
): Promise<void> {
  // Read by the chain runner before this hook (the manifest needs the request body).
  const body = ctx.body!;
  const fp = fingerprints.of({
    method: ctx.method,
    routeId: ctx.route.id,
    path: ctx.path,
    query: ctx.query,
    headers: ctx.req.headers,
    fingerprintHeaders: s.fingerprintHeaders,
    body,
  });
  if ('error' in fp) return answerProblem(ctx, 'SLC_ERR_JSON_DUPLICATE_KEY', { detail: fp.error });
  const id = recordId(scope, key);
  const owner = randomUUID();
  const claim = () => {
    const pending = store.claim({
      id,
      fingerprint: fp.fingerprint,
      owner,
      ttlMs: s.ttlMs,
      leaseMs: s.leaseMs,
    });
    return ctx.span === null ? pending : traced(ctx.span, 'idempotency claim', CLAIM_SPAN, pending);
  };

  let result: ClaimResult;
  try {
    result = await claim();
    // inProgress.mode wait: poll (25 ms doubling to 250 ms) until the record completes, lapses or the wait ends.
    for (
      let pause = 25, until = Date.now() + s.waitMs;
      waiting(result, fp.fingerprint) && Date.now() < until;
    ) {
      await sleep(Math.min(pause, until - Date.now()));
      pause = Math.min(pause * 2, 250);
      result = await claim();
    }
  } catch (err) {
    m.request(ctx, 'store_error');
    health.failed(deps.log, { route: ctx.route.id, requestId: ctx.requestId }, err);
    // The claim may still run once the store answers (it was sent): take that record back, so
    // the 503's "nothing ran, retry" holds and the key is not blocked for a lease.
    if (err instanceof StoreUnavailableError && err.mayHaveApplied)
      deps.background.run(keepTrying(() => store.release(id, owner), s.leaseMs));
    return answerProblem(ctx, 'SLC_ERR_IDEMPOTENCY_STORE_UNAVAILABLE', {
      headers: { 'retry-after': s.retryAfter },
    });
  }

  health.answered(deps.log, { route: ctx.route.id });
  if (result.outcome !== 'found') {
    m.request(ctx, result.outcome === 'claimed' ? 'executed' : 'takeover');
    const execution = new Execution(store, id, owner, leases, ctx.route.id, deps, m, ctx.span);
    if (s.operationsPrefix !== null) {
      accepted(ctx, key, s.operationsPrefix, s.retryAfter);
      ctx.keyed = true;
      deps.background.run(runInBackground(ctx, execution, s.maxResponseBytes));
      return;
    }
    // Execute: the handler sends these bytes (ctx.body) and the tap records its response.
    ctx.keyed = true;
    ctx.addTap(new RecordResponse(execution, s.maxResponseBytes));
    return;
  }

  const record = result.record;
  if (record.fingerprint !== fp.fingerprint) {
    m.request(ctx, 'mismatch');
    return answerProblem(ctx, 'SLC_ERR_IDEMPOTENCY_KEY_REUSED', {
      detail: 'the key was first used for a request with another method, path, query, headers or body',
    });
  }
  if (record.state === 'COMPLETED') {
    m.request(ctx, 'replayed');
    return replay(ctx, record.response!);
  }
  if (s.operationsPrefix !== null) {
    m.request(ctx, 'accepted');
    return accepted(ctx, key, s.operationsPrefix, s.retryAfter);
  }
  m.request(ctx, 'conflict');
  answerProblem(ctx, 'SLC_ERR_IDEMPOTENCY_IN_PROGRESS', { headers: { 'retry-after': s.retryAfter } });
}

/** Still running under someone else's lease, for the same request: worth waiting for. */
function waiting(r: ClaimResult, fingerprint: string): boolean {
  return r.outcome === 'found' && r.record.state === 'IN_PROGRESS' && r.record.fingerprint === fingerprint;
}
