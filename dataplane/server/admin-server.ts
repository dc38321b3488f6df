/**
 * The admin port (never exposed by the public Service): PUT /config (bearer token), GET /config,
 * GET /debug/config (bearer token: the running snapshot, Secrets redacted), /healthz, /readyz (503
 * while draining),
 * /metrics, DELETE /cache?prefix= (bearer token). A rejected snapshot answers 422 with errors naming route ids and
 * fields, and the running configuration stays.
 */
import { type AdminTokens, authorizedBy } from '../config/admin-auth.ts';
import { createGunzip } from 'node:zlib';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { debugConfigText } from '../config/debug-config.ts';
import type { Snapshot } from '../config/route-table.ts';
import { arrivedAs } from '../config/wire.ts';
import type { ErrorCode } from '../errors/codes.ts';
import { problem } from '../errors/problem.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { ApplyResult, RuntimeHolder } from '../runtime/holder.ts';

/**
 * What the admin port serves: one process's holder (holderAdminState), or a cluster primary
 * that forwards snapshots to its workers and aggregates their metrics.
 */
export interface AdminState {
  /** Validates and applies a snapshot (everywhere); on refusal the running configuration stays. */
  apply(snapshot: unknown): ApplyResult | Promise<ApplyResult>;
  /** The hash of the running snapshot ("" when none, or when the workers disagree). */
  readonly hash: string;
  /** GET /config: {hash} and whatever else describes the running configuration. */
  describe(): Record<string, unknown>;
  /** The snapshot that runs (null before the first), for GET /debug/config. */
  snapshot(): Snapshot | null;
  /** Ready: a configuration is loaded (by every worker). */
  ready(): boolean;
  /** Draining (SIGTERM): /readyz answers 503 whatever ready() says, /healthz stays 200. */
  draining?(): boolean;
  /** The Prometheus text of /metrics. */
  metrics(): Promise<string>;
  readonly metricsContentType: string;
  /** DELETE /cache: removes the proxy-cache entries whose key starts with the prefix; how many. Absent: not here. */
  purgeCache?(prefix: string): Promise<number>;
  /** Counts one answered admin request (sluice_admin_requests_total). */
  counted(method: string, route: string, status: number): void;
}

export function holderAdminState(
  holder: RuntimeHolder,
  metrics: Metrics,
  /** What DELETE /cache purges (the data plane's stores); absent: not here. */
  stores?: { purge(prefix: string): Promise<number> },
  draining?: () => boolean,
  /** The Gateway listener ports: GET /config lists the snapshot's listeners and whether their port is bound. */
  listeners?: { describe(): { id: string; port: number; bound: boolean; error?: string }[] },
): AdminState {
  return {
    ...(draining && { draining }),
    apply: (snapshot) => holder.apply(snapshot),
    get hash() {
      return holder.hash;
    },
    describe: () => {
      const states = listeners?.describe() ?? [];
      return states.length ? { hash: holder.hash, listeners: states } : { hash: holder.hash };
    },
    snapshot: () => holder.snapshot,
    ready: () => holder.current !== null,
    metrics: () => metrics.registry.metrics(),
    metricsContentType: metrics.registry.contentType,
    ...(stores ? { purgeCache: (prefix: string) => stores.purge(prefix) } : {}),
    counted: (method, route, status) => metrics.adminRequests.labels(method, route, String(status)).inc(),
  };
}

export interface AdminOptions {
  /** The bearer token, or the tokens valid now (config/admin-auth.ts). */
  token: AdminTokens;
  maxConfigBytes: number;
  /** PEM certificate and key: the admin port speaks HTTPS (the controller checks it against its CA). */
  tls?: { cert: string; key: string };
}

function unauthorized(reply: FastifyReply, what: string) {
  reply.header('www-authenticate', 'Bearer realm="sluice-admin"');
  return sendError(reply, 'SLC_ERR_UNAUTHORIZED', `${what} needs the admin bearer token`);
}

function sendError(reply: FastifyReply, code: ErrorCode, detail?: string, extra?: Record<string, unknown>) {
  const body = problem(code, detail, extra);
  return reply.code(body.status).type('application/problem+json').send(body);
}

export function createAdminServer(state: AdminState, opts: AdminOptions): FastifyInstance {
  const app = Fastify({
    logger: false,
    bodyLimit: opts.maxConfigBytes,
    forceCloseConnections: true,
    ...(opts.tls ? { https: { cert: opts.tls.cert, key: opts.tls.key } } : {}),
  }) as unknown as FastifyInstance;
  const authorized = (header: string | undefined) => authorizedBy(header, opts.token);

  // fastify's own JSON parser (prototype poisoning refused), remembering the text a snapshot came
  // as (config/wire.ts): its hash is checked on that text, and the last good snapshot is written
  // as that text rather than serialized again.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, text, done) =>
    parseJson(request, text as string, (err: Error | null, body?: unknown) => {
      if (err === null && typeof body === 'object' && body !== null) arrivedAs(body, text as string);
      done(err, body);
    }),
  );

  // A snapshot may come gzipped (Content-Encoding: gzip, as the controller sends it: 5,000 routes
  // are 6.9 MB of JSON and ~0.4 MB gzipped, which the controller keeps instead). bodyLimit counts
  // the decoded bytes fastify reads from the stream returned here, so a small bomb is refused
  // with 413 like a large body. Any other coding is 415: unread rather than misread.
  app.addHook('preParsing', async (request, _reply, payload) => {
    const coding = request.headers['content-encoding']?.trim().toLowerCase();
    if (coding === undefined || coding === '' || coding === 'identity') return payload;
    if (coding !== 'gzip')
      throw Object.assign(new Error(`Content-Encoding ${coding} is not accepted: send gzip or identity`), {
        statusCode: 415,
      });
    const decoded = Object.assign(createGunzip(), { receivedEncodedLength: 0 });
    // fastify compares receivedEncodedLength, not the decoded length, with Content-Length.
    payload.on('data', (chunk: Buffer) => {
      decoded.receivedEncodedLength += chunk.length;
    });
    payload.on('error', (err) => decoded.destroy(err));
    return payload.pipe(decoded); // a gzip error reaches the parser as a 400
  });

  app.setErrorHandler((err: { statusCode?: number; message: string }, _request, reply) => {
    const status = err.statusCode ?? 500;
    if (status === 413)
      return sendError(
        reply,
        'SLC_ERR_BODY_TOO_LARGE',
        `a body over ${opts.maxConfigBytes} bytes is refused`,
      );
    if (status === 415) return sendError(reply, 'SLC_ERR_UNSUPPORTED_ENCODING', err.message);
    if (status >= 400 && status < 500) return sendError(reply, 'SLC_ERR_BAD_REQUEST', err.message);
    return sendError(reply, 'SLC_ERR_INTERNAL');
  });

  app.addHook('onResponse', async (request, reply) => {
    state.counted(request.method, request.routeOptions.url ?? 'other', reply.statusCode);
  });

  app.put('/config', async (request, reply) => {
    if (!authorized(request.headers.authorization)) return unauthorized(reply, 'PUT /config');
    const outcome = await state.apply(request.body);
    if (outcome.result === 'rejected')
      return sendError(
        reply,
        'SLC_ERR_CONFIG_INVALID',
        'the snapshot was not applied; the running configuration stays',
        {
          errors: outcome.errors,
          hash: state.hash,
        },
      );
    return { result: outcome.result, hash: outcome.hash };
  });
  app.get('/config', async () => state.describe());
  app.get('/debug/config', async (request, reply) => {
    if (!authorized(request.headers.authorization)) return unauthorized(reply, 'GET /debug/config');
    const running = state.snapshot();
    if (running === null) return sendError(reply, 'SLC_ERR_NOT_READY');
    return reply.type('application/json').send(debugConfigText(running));
  });
  // proxy-cache purge: keys start with the request path (plugins/proxy-cache/key.ts), so
  // prefix=/api/items removes every method, query, variant and caller of that subtree; "/" all.
  app.delete('/cache', async (request, reply) => {
    if (!authorized(request.headers.authorization)) return unauthorized(reply, 'DELETE /cache');
    const prefix = (request.query as Record<string, unknown>).prefix;
    if (typeof prefix !== 'string' || !prefix.startsWith('/'))
      return sendError(reply, 'SLC_ERR_BAD_REQUEST', 'prefix: a path prefix starting with "/" is required');
    if (state.purgeCache === undefined) return sendError(reply, 'SLC_ERR_CACHE_PURGE_UNSUPPORTED');
    try {
      return { purged: await state.purgeCache(prefix), prefix };
    } catch (err) {
      return sendError(reply, 'SLC_ERR_CACHE_PURGE_FAILED', err instanceof Error ? err.message : String(err));
    }
  });
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    if (state.draining?.())
      return sendError(
        reply,
        'SLC_ERR_DRAINING',
        'draining: requests in flight finish, then the process exits',
      );
    return state.ready() ? { status: 'ready', hash: state.hash } : sendError(reply, 'SLC_ERR_NOT_READY');
  });
  app.get('/metrics', async (_request, reply) => {
    reply.type(state.metricsContentType);
    return state.metrics();
  });
  return app;
}
