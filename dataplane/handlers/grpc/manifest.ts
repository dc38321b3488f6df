/**
 * grpc: an HTTP request answered by a unary (or server-streaming, as NDJSON) gRPC method of the
 * route's service (REST → gRPC, issue 13). The user writes `routes[].grpc` in a GatewayRoute: the .proto files inline, the
 * service and method, and how the request maps to its message, either explicitly (`pattern`'s
 * {parameters} and the query set fields, `body` is the whole message or one field) or from the
 * method's google.api.http option (`annotation: true`). The route table carries the same with
 * the annotation already read into pattern, body and verb, so the data plane binds one shape.
 * The upstream is the service (service.url or backendRef): https is a TLS channel.
 */
import { type Static, Type } from '@sinclair/typebox';
import type protobuf from 'protobufjs';
import type { ConfigProblem } from '../../config/config-problem.ts';
import { DURATION_PATTERN, MAX_TIMEOUT_MS, parseDuration } from '../../config/duration.ts';
import { handlerManifest } from '../../config/manifest.ts';
import { GRPC_TEMPLATE, parseTemplate, spansSegments, templateFields } from '../../config/http-template.ts';
import {
  annotationOf,
  fieldNamed,
  findMethod,
  type HttpRule,
  parseProtos,
} from '../../config/proto-files.ts';

const IDENT = '[A-Za-z_][A-Za-z0-9_]*';
const VERB = '^[A-Z]+$';
const HEADER_NAME = '^[a-z0-9][a-z0-9._-]*$';
const MAX_PROTO_BYTES = 256 * 1024;

const ProtoFile = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 253,
      pattern: '^[A-Za-z0-9_][A-Za-z0-9_./-]*\\.proto$',
      description: 'The file name other protos import it by, e.g. shop/v1/catalog.proto.',
    }),
    content: Type.String({ minLength: 1, maxLength: MAX_PROTO_BYTES, description: 'The .proto text.' }),
  },
  { additionalProperties: false, description: 'One .proto file, inline.' },
);

const Protos = Type.Array(ProtoFile, {
  minItems: 1,
  maxItems: 16,
  description:
    'The .proto files declaring the service and every message it uses (google/protobuf well-known types and ' +
    'google/api annotations need not be given).',
  'x-kubernetes-validations': [
    { rule: 'self.all(p, self.exists_one(o, o.name == p.name))', message: 'proto names must be unique' },
  ],
});

const HeaderNames = (description: string) =>
  Type.Array(
    Type.String({
      minLength: 1,
      maxLength: 128,
      pattern: HEADER_NAME,
      description: 'A lower-case header name.',
    }),
    {
      maxItems: 32,
      description,
    },
  );

const Service = Type.String({
  minLength: 1,
  maxLength: 512,
  pattern: `^\\.?${IDENT}(\\.${IDENT})*$`,
  description: 'The gRPC service, fully qualified, e.g. shop.v1.Catalog.',
});
const Method = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: `^${IDENT}$`,
  description: 'A unary or server-streaming method of the service (a stream is answered as NDJSON).',
});
const Pattern = Type.String({
  maxLength: 2048,
  pattern: GRPC_TEMPLATE,
  description:
    'The request path as a google.api.http template: literals, "*", "**", and "{field}" (one segment) or ' +
    '"{field=shelves/*}" (several) setting a field of the request message (dotted for a nested one), an ' +
    'optional ":verb", e.g. "/v1/items/{item_id}" or "/v1/{name=shelves/*/books/*}"; a request that does not ' +
    'fit it gets 404. Absent: any path of the route, no parameters.',
});
const Body = Type.String({
  pattern: `^(\\*|${IDENT})$`,
  description:
    'What the JSON body is: "*" the whole request message, a field name that field; absent: the route takes no ' +
    'body. Query parameters set the other fields ("page.size=10"), except with "*".',
});

export const GrpcSpec = Type.Object(
  {
    protos: Protos,
    service: Service,
    method: Method,
    annotation: Type.Optional(
      Type.Boolean({
        description:
          "Map the request by the method's google.api.http option (its verb, path and body) instead of pattern " +
          'and body.',
      }),
    ),
    pattern: Type.Optional(Pattern),
    body: Type.Optional(Body),
    timeout: Type.Optional(
      Type.String({
        pattern: DURATION_PATTERN,
        maxLength: 32,
        description:
          "The call's deadline (default: the service's request timeout, else its response timeout).",
      }),
    ),
    requestHeaders: Type.Optional(
      HeaderNames(
        'Request headers sent to the service as gRPC metadata (never grpc-*, hop-by-hop or gateway headers).',
      ),
    ),
    responseHeaders: Type.Optional(
      HeaderNames('Metadata the service answers with (headers or trailers) returned as response headers.'),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Answer with a gRPC method of the service (instead of proxying to it): JSON in and out by the proto3 JSON ' +
      'mapping (NDJSON for a server stream), the gRPC status as the HTTP status. The service url is https for a TLS ' +
      'channel.',
    'x-kubernetes-validations': [
      {
        rule: '!(has(self.annotation) && self.annotation) || (!has(self.pattern) && !has(self.body))',
        message: 'annotation takes pattern and body from the proto: set neither',
      },
    ],
  },
);
export type GrpcSpec = Static<typeof GrpcSpec>;

export const GrpcHandler = Type.Object(
  {
    type: Type.Literal('grpc'),
    upstream: Type.String({ minLength: 1 }),
    protos: Type.Array(ProtoFile, { minItems: 1 }),
    service: Service,
    method: Method,
    pattern: Type.Optional(Type.String({ pattern: GRPC_TEMPLATE })),
    body: Type.Optional(Body),
    /** The only HTTP method served (from the annotation); absent: those the route matches. */
    verb: Type.Optional(Type.String({ pattern: VERB })),
    /** The annotation's additional_bindings, tried in order after the binding above. */
    additionalBindings: Type.Optional(
      Type.Array(
        Type.Object(
          {
            verb: Type.String({ pattern: VERB }),
            pattern: Type.String({ pattern: GRPC_TEMPLATE }),
            body: Type.Optional(Body),
          },
          { additionalProperties: false },
        ),
        { minItems: 1, maxItems: 32 },
      ),
    ),
    requestHeaders: Type.Array(Type.String({ pattern: HEADER_NAME })),
    responseHeaders: Type.Array(Type.String({ pattern: HEADER_NAME })),
  },
  { additionalProperties: false },
);
export type GrpcHandler = Static<typeof GrpcHandler>;

/**
 * Header names that never cross as metadata: gRPC's own (grpc-*, binary -bin), HTTP/2 and
 * hop-by-hop headers, the body's framing, and the gateway's (forwarding, request id, x-sluice-*).
 */
const RESERVED =
  /^(grpc-.*|.*-bin|:.*|connection|keep-alive|proxy-.*|te|trailer|transfer-encoding|upgrade|host|content-type|content-length|content-encoding|user-agent|forwarded|x-forwarded-.*|x-real-ip|x-request-id|x-sluice-.*)$/;

function checkHeaders(field: string, names: readonly string[] | undefined, problems: ConfigProblem[]) {
  names?.forEach((name, i) => {
    if (RESERVED.test(name))
      problems.push({ field: `${field}[${i}]`, message: `${name} is reserved to gRPC or the gateway` });
  });
}

/** The mapping fits the method: parameters name scalar fields of the request, the body a field. */
function checkMapping(
  c: { protos: GrpcSpec['protos']; service: string; method: string },
  rule: Partial<HttpRule>,
  ruleField: (f: string) => string,
): ConfigProblem[] {
  const parsed = parseProtos(c.protos);
  if ('problem' in parsed) return [parsed.problem];
  const found = findMethod(parsed.root, c.service, c.method);
  if (!('method' in found)) return [found];
  const problems: ConfigProblem[] = [];
  if (rule.pattern !== undefined) {
    const t = parseTemplate(rule.pattern);
    if ('error' in t) problems.push({ field: ruleField('pattern'), message: `the pattern ${t.error}` });
    else
      for (const name of templateFields(t)) {
        const f = fieldAt(found.request, name);
        if (typeof f === 'string')
          problems.push({
            field: ruleField('pattern'),
            message: name.includes('.') ? `{${name}}: ${f}` : `{${name}} ${f.slice(name.length + 1)}`,
          });
        else if (f.repeated || f.map || (f.resolvedType !== null && 'fieldsArray' in f.resolvedType))
          problems.push({
            field: ruleField('pattern'),
            message: `{${name}} must be a single scalar or enum field`,
          });
        else if (spansSegments(t, name) && f.type !== 'string')
          problems.push({
            field: ruleField('pattern'),
            message: `{${name}} spans segments: it must be a string field`,
          });
      }
  }
  if (rule.body !== undefined && rule.body !== '*' && fieldNamed(found.request, rule.body) === undefined)
    problems.push({
      field: ruleField('body'),
      message: `${rule.body} is not a field of ${found.request.name}`,
    });
  return problems;
}

/** The HTTP rules of a user's config: its annotation's bindings, or pattern and body as written. */
function rulesOf(c: GrpcSpec): Partial<HttpRule>[] | ConfigProblem {
  if (c.annotation !== true) return [{ pattern: c.pattern, body: c.body }];
  const parsed = parseProtos(c.protos);
  if ('problem' in parsed) return parsed.problem;
  const found = findMethod(parsed.root, c.service, c.method);
  if (!('method' in found)) return found;
  const rules = annotationOf(found.method);
  return typeof rules === 'string' ? { field: 'annotation', message: rules } : rules;
}

function checkSpec(c: GrpcSpec): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (c.timeout !== undefined) {
    const ms = parseDuration(c.timeout);
    if (ms === undefined || ms < 1 || ms > MAX_TIMEOUT_MS)
      problems.push({
        field: 'timeout',
        message: `${JSON.stringify(c.timeout)} must be between 1ms and 596h`,
      });
  }
  checkHeaders('requestHeaders', c.requestHeaders, problems);
  checkHeaders('responseHeaders', c.responseHeaders, problems);
  // The CRD's CEL rule, again for files.
  if (c.annotation === true && (c.pattern !== undefined || c.body !== undefined))
    problems.push({
      field: 'annotation',
      message: 'annotation takes pattern and body from the proto: set neither',
    });
  const rules = rulesOf(c);
  if ('message' in rules) return [...problems, rules];
  // From the annotation, a mismatch is the method's (its option), not a field the user wrote.
  for (const rule of rules) problems.push(...checkMapping(c, rule, (f) => (c.annotation ? 'annotation' : f)));
  return problems;
}

function checkEntry(h: GrpcHandler): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  checkHeaders('requestHeaders', h.requestHeaders, problems);
  checkHeaders('responseHeaders', h.responseHeaders, problems);
  problems.push(...checkMapping(h, h, (f) => f));
  for (const [i, b] of (h.additionalBindings ?? []).entries())
    problems.push(...checkMapping(h, b, (f) => `additionalBindings[${i}].${f}`));
  return problems;
}

export const manifest = handlerManifest({
  kind: 'grpc',
  schema: GrpcHandler,
  upstreams: (h) => [{ field: 'upstream', id: h.upstream }],
  checks: checkEntry,
  needs: { requestBody: true },
  route: {
    field: 'grpc',
    schema: GrpcSpec,
    checks: checkSpec,
    backends: () => [], // the service's own url or backendRef
    upstreams: (c, _urls, serviceUrl) => [
      { url: serviceUrl, ...(c.timeout !== undefined && { requestMs: parseDuration(c.timeout) }) },
    ],
    entry: (c, ids) => {
      const [rule, ...more] = rulesOf(c) as Partial<HttpRule>[]; // checked: not a problem
      return {
        type: 'grpc' as const,
        upstream: ids[0],
        protos: c.protos,
        service: c.service.replace(/^\./, ''),
        method: c.method,
        ...(rule.pattern !== undefined && { pattern: rule.pattern }),
        ...(rule.body !== undefined && { body: rule.body }),
        ...(rule.verb !== undefined && { verb: rule.verb }),
        ...(more.length > 0 && { additionalBindings: more as HttpRule[] }),
        requestHeaders: c.requestHeaders ?? [],
        responseHeaders: c.responseHeaders ?? [],
      };
    },
  },
});

/** The field at a dotted path of `type` (through singular message fields), or why there is none. */
function fieldAt(type: protobuf.Type, path: string): protobuf.Field | string {
  let t = type;
  const names = path.split('.');
  for (let i = 0; ; i++) {
    const f = fieldNamed(t, names[i]);
    if (f === undefined) return `${names[i]} is not a field of ${t.name}`;
    if (i === names.length - 1) return f;
    const rt = f.resolvedType;
    if (rt === null || !('fieldsArray' in rt) || f.repeated || f.map)
      return `${names[i]} is not a message field to select in`;
    t = rt as protobuf.Type;
  }
}
