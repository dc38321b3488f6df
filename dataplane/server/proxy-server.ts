/**
 * The public proxy port: fastify with one catch-all route (fastify cannot add routes after
 * start; our own router, swapped per snapshot, does the matching). Bodies are never parsed
 * here: they stream to the upstream. The handler hijacks the reply and writes to the raw
 * response, so fastify's reply machinery stays off the hot path.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { Metrics } from '../observability/metrics.ts';
import type { RuntimeHolder } from '../runtime/holder.ts';
import { sendProblem } from '../errors/problem.ts';
import { createRequestHandler, type IngressOptions } from './handle.ts';
import { createUpgradeHandler } from './websocket.ts';

export interface ProxyServerOptions extends IngressOptions {
  maxHeaderBytes: number;
  /** Time allowed to receive a whole request (Node's requestTimeout). */
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE'];

export function createProxyServer(
  holder: RuntimeHolder,
  opts: ProxyServerOptions,
  metrics: Metrics,
): FastifyInstance {
  const app = Fastify({
    logger: false,
    routerOptions: { maxParamLength: 65_535 },
    requestTimeout: opts.requestTimeoutMs,
    keepAliveTimeout: opts.keepAliveTimeoutMs,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // Strict parsing always: Node's lenient parser is never enabled (ARCHITECTURE §6.1 rule 1).
    http: { maxHeaderSize: opts.maxHeaderBytes, insecureHTTPParser: false, requireHostHeader: true },
    frameworkErrors: (err, _request, reply) => {
      reply.hijack();
      sendProblem(reply.raw, 'SLC_ERR_BAD_REQUEST', { detail: err.message });
    },
  });
  app.removeAllContentTypeParsers();
  // Leave every body unread: the proxy streams it.
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));
  const handle = createRequestHandler(holder, opts, metrics);
  app.route({
    method: METHODS,
    url: '/*',
    handler: (request, reply) => {
      reply.hijack();
      handle(request.raw, reply.raw);
    },
  });
  app.server.on('upgrade', createUpgradeHandler(holder, opts, metrics));
  return app;
}
