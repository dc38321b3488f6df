/**
 * An OTLP/HTTP receiver on loopback for the tracing tests: it takes what the real exporter
 * (OTLP/HTTP protobuf, POST /v1/traces) sends and decodes it with protobufjs and the part of the
 * OTLP trace schema the tests read, so a test asserts on the spans as a collector got them.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import protobuf from 'protobufjs';

/** The part of opentelemetry-proto's trace and common messages the assertions read (field numbers as published). */
const OTLP = protobuf
  .parse(`
syntax = "proto3";
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message Resource { repeated KeyValue attributes = 1; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; }
message InstrumentationScope { string name = 1; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; bytes parent_span_id = 4; string name = 5; int32 kind = 6;
  fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8; repeated KeyValue attributes = 9;
  repeated Link links = 13; Status status = 15;
}
message Link { bytes trace_id = 1; bytes span_id = 2; }
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue { oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; } }
`)
  .root.lookupType('ExportTraceServiceRequest');

export interface DecodedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  /** Values as decoded: strings as strings, ints as decimal strings, booleans and doubles as such. */
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
  status: { code: number; message?: string };
  service: string;
  scope: string;
}

export const SPAN_KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3 } as const;
export const STATUS_ERROR = 2;

export interface OtlpReceiver {
  /** For OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  spans: DecodedSpan[];
  /** `METHOD /path content-type` of each export. */
  exports: string[];
  /** Resolves once `match` holds for some spans (or rejects after `ms`). */
  waitFor(match: (spans: DecodedSpan[]) => boolean, ms?: number): Promise<void>;
  close(): Promise<void>;
}

type KeyValues = { key: string; value: Record<string, unknown> }[];
const hex = (b: unknown) => (b as Buffer).toString('hex');
const attrs = (list: KeyValues) =>
  Object.fromEntries(list.map((kv) => [kv.key, Object.values(kv.value ?? {})[0]]));

export function decode(body: Buffer): DecodedSpan[] {
  const req = OTLP.toObject(OTLP.decode(body), { longs: String, bytes: Buffer, defaults: true }) as {
    resourceSpans: {
      resource: { attributes: KeyValues };
      scopeSpans: { scope: { name: string }; spans: Record<string, unknown>[] }[];
    }[];
  };
  const out: DecodedSpan[] = [];
  for (const rs of req.resourceSpans) {
    const service = String(attrs(rs.resource.attributes)['service.name']);
    for (const ss of rs.scopeSpans)
      for (const s of ss.spans)
        out.push({
          traceId: hex(s.traceId),
          spanId: hex(s.spanId),
          parentSpanId: hex(s.parentSpanId),
          name: s.name as string,
          kind: s.kind as number,
          attributes: attrs(s.attributes as KeyValues),
          links: (s.links as { traceId: Buffer; spanId: Buffer }[]).map((l) => ({
            traceId: hex(l.traceId),
            spanId: hex(l.spanId),
          })),
          status: (s.status as { code: number; message?: string }) ?? { code: 0 },
          service,
          scope: ss.scope?.name ?? '',
        });
  }
  return out;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: DecodedSpan[] = [];
  const exports: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      exports.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
      spans.push(...decode(Buffer.concat(chunks)));
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      res.end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    exports,
    async waitFor(match, ms = 5_000) {
      const end = Date.now() + ms;
      while (!match(spans)) {
        if (Date.now() > end) throw new Error(`the receiver did not get the spans in ${ms} ms`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}
