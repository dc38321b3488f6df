/**
 * soap: answers a JSON POST with a SOAP call to the route's service (its envelope from the
 * declared elements or the mapped body, envelope.ts) and the answer turned back into JSON
 * (soap-call.ts, response.ts). Bound once per route: the upstream, the envelope's markup, the
 * XML reader, the call's own headers. Per request: the JSON body (read once by the chain, with
 * the body limit) parsed, the envelope rendered, one call through upstream/call.ts (timeouts,
 * retries, breaker, metrics).
 */
import type { Abortable } from '../../upstream/abortable.ts';
import { render, template, xmlText } from '../../config/template.ts';
import { problem } from '../../errors/problem.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { captureParams, compilePathRewrite } from '../../pipeline/transform/path-rewrite.ts';
import { isJsonType } from '../../pipeline/transform/json-fields.ts';
import { callUpstream, type ResponseSink } from '../../upstream/call.ts';
import { callHeaders } from '../call-headers.ts';
import { ClientSink } from '../client-sink.ts';
import { deliverJson } from '../deliver.ts';
import { defineHandler } from '../types.ts';
import { BodySources } from './body-sources.ts';
import { compileEnvelope, jsonToXml, MappingError } from './envelope.ts';
import { manifest, type SoapHandler } from './manifest.ts';
import { SOAP_METRICS } from './metrics.ts';
import { SoapReader } from './response.ts';
import { type BoundSoap, SoapCall } from './soap-call.ts';

/** The client's SOAPAction never reaches the service: the route's (or none, in 1.2) does. */
const DROP = new Set(['soapaction']);
const EMPTY = {};

/** The call's own headers: the content type and action of the SOAP version. */
function ownHeaders(h: SoapHandler): Record<string, string> {
  if (h.version === '1.1')
    return { 'content-type': 'text/xml; charset=utf-8', accept: 'text/xml', soapaction: `"${h.action}"` };
  const action = h.action === '' ? '' : `; action="${h.action}"`;
  return { 'content-type': `application/soap+xml; charset=utf-8${action}`, accept: 'application/soap+xml' };
}

export default defineHandler(manifest, {
  metrics: [SOAP_METRICS],
  create(deps) {
    const result = deps.metrics.of(SOAP_METRICS);
    return {
      bind(route, entry) {
        const up = deps.upstream(entry.upstream);
        const envelope = compileEnvelope(entry);
        const soap: BoundSoap = {
          routeId: route.id,
          reader: new SoapReader(entry.maxDepth),
          maxResponseBytes: entry.maxResponseBytes,
          result,
        };
        const own = ownHeaders(entry);
        const path = up.basePath + (entry.path ?? '') || '/';
        const pattern =
          entry.pattern === undefined
            ? null
            : compilePathRewrite({ pattern: entry.pattern, rewrite: '/' }, template);

        const refuse = (ctx: RequestContext, sink: ResponseSink, detail: string) => {
          result(route.id, 'bad_request');
          const body = problem('SLC_ERR_SOAP_BAD_REQUEST', detail, { requestId: ctx.requestId });
          deliverJson(sink, body.status, 'application/problem+json', body);
        };

        // `signal`: the client's when the answer goes to it (none for a call in the background).
        const call = (ctx: RequestContext, sink: ResponseSink, signal?: Abortable) => {
          if (ctx.method !== 'POST') return sink.end({ code: 'SLC_ERR_METHOD_NOT_ALLOWED', sent: false });
          const params = pattern === null ? null : captureParams(pattern, ctx.path);
          if (pattern !== null && params === null)
            return sink.end({ code: 'SLC_ERR_ROUTE_NOT_FOUND', sent: false });
          const raw = ctx.body;
          let json: unknown = EMPTY;
          if (raw !== null && raw.length > 0) {
            if (!isJsonType(ctx.headers['content-type']))
              return refuse(ctx, sink, 'the body must be JSON (Content-Type: application/json)');
            try {
              json = JSON.parse(raw.toString('utf8'));
            } catch {
              return refuse(ctx, sink, 'the body is not valid JSON');
            }
          }
          let children: string | null;
          if (envelope.children === null) {
            try {
              children = jsonToXml(json, entry.maxDepth);
            } catch (err) {
              if (err instanceof MappingError) return refuse(ctx, sink, err.message);
              throw err;
            }
          } else {
            const sources = new BodySources(ctx, params, json);
            children = render(envelope.children, sources, xmlText);
            if (sources.refused !== null)
              return refuse(ctx, sink, `body.${sources.refused} is an object or an array, not a value`);
            if (children === null)
              return refuse(ctx, sink, 'a value holds a character XML 1.0 does not allow');
          }
          const body = Buffer.from(envelope.head + children + envelope.tail);
          const headers = callHeaders(ctx.headers, own, DROP);
          headers['content-length'] = String(body.length);
          callUpstream(
            up,
            { path, method: 'POST', headers, body, keyed: ctx.keyed, signal, span: ctx.span },
            new SoapCall(sink, soap, ctx.requestId),
            deps.metrics,
          );
        };
        return {
          handle: (ctx) => call(ctx, new ClientSink(ctx), ctx.signal),
          call: (ctx, sink) => call(ctx, sink),
        };
      },
    };
  },
});
