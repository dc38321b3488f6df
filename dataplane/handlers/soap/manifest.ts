/**
 * soap: a JSON request becomes a SOAP 1.1 or 1.2 call to the route's service, and its XML answer
 * becomes JSON (issue 13, REST → SOAP). The user writes `routes[].soap` in a GatewayRoute: the
 * operation element and its namespace, the SOAPAction, and either the operation's children as a
 * list of element paths whose values are templates ("{{ body.order.id }}", "{{ path.id }}",
 * "{{ query.q }}": always escaped text, never markup), or nothing: the JSON body is then mapped
 * under the operation element member by member. The upstream is the service (url or
 * backendRef), with an optional endpoint path.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { ConfigProblem } from '../../config/config-problem.ts';
import { handlerManifest } from '../../config/manifest.ts';
import { compileTemplate, xmlText } from '../../config/template.ts';
import { PATH_PATTERN, PathParams } from '../../config/transform-schema.ts';

/** An XML element name without a prefix (ASCII NCName): the operation and the declared elements. */
const XML_NAME = '[A-Za-z_][A-Za-z0-9._-]*';
/** A declared element's place under the operation: names joined by "/", e.g. "order/item/sku". */
const ELEMENT_PATH = `^${XML_NAME}(/${XML_NAME})*$`;
/** A namespace URI as an attribute value: nothing that is markup or space. */
const NAMESPACE = '^[^\\s"\'<>&]+$';
/** A SOAPAction (a quoted header value; SOAP 1.2: a quoted media-type parameter): visible ASCII but " and \. */
const ACTION = '^[!#-\\[\\]-~]*$';
/** An endpoint path appended to the service url's path. */
const ENDPOINT_PATH = "^(/[A-Za-z0-9\\-._~!$&'()*+,=:@%]*)+$";

export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
export const DEFAULT_MAX_DEPTH = 64;
const MAX_DEPTH = 512;
const MAX_ELEMENTS = 256;

const versions = Type.Union([Type.Literal('1.1'), Type.Literal('1.2')]);

const Element = Type.Object(
  {
    path: Type.String({
      minLength: 1,
      maxLength: 1024,
      pattern: ELEMENT_PATH,
      description:
        'Where the element goes under the operation: names joined by "/", e.g. "order/sku". Consecutive ' +
        'entries share their common parents.',
    }),
    value: Type.String({
      maxLength: 8192,
      description:
        'Its text: a template of {{ body.PATH }} (a JSON body member, e.g. body.order.id), {{ path.NAME }}, ' +
        '{{ query.NAME }}, {{ header.NAME }}, {{ jwt.claims.NAME }}, {{ consumer.id }}; always escaped as text.',
    }),
  },
  { additionalProperties: false, description: 'One element of the operation, holding text.' },
);

const common = {
  version: Type.Optional(
    Type.Union([Type.Literal('1.1'), Type.Literal('1.2')], {
      description:
        'SOAP 1.1 (text/xml and a SOAPAction header, the default) or 1.2 (application/soap+xml; action="…").',
    }),
  ),
  path: Type.Optional(
    Type.String({
      maxLength: 2048,
      pattern: ENDPOINT_PATH,
      description: "The endpoint's path, appended to the service url's path, e.g. /ws/orders.",
    }),
  ),
  action: Type.Optional(
    Type.String({
      maxLength: 1024,
      pattern: ACTION,
      description: 'The SOAPAction (1.1) or action parameter (1.2), e.g. http://example.com/orders/Create.',
    }),
  ),
  operation: Type.String({
    minLength: 1,
    maxLength: 256,
    pattern: `^${XML_NAME}$`,
    description: 'The operation element, first child of the SOAP Body, e.g. CreateOrder.',
  }),
  namespace: Type.Optional(
    Type.String({
      maxLength: 2048,
      pattern: NAMESPACE,
      description: "The operation element's namespace URI, e.g. http://example.com/orders.",
    }),
  ),
  pattern: Type.Optional(
    Type.String({
      maxLength: 2048,
      pattern: PATH_PATTERN,
      description:
        'The request path, a "{name}" for each segment captured for {{ path.NAME }}, e.g. "/orders/{id}"; a ' +
        'request that does not fit it gets 404.',
    }),
  ),
  elements: Type.Optional(
    Type.Array(Element, {
      maxItems: MAX_ELEMENTS,
      description:
        "The operation's children, in order. Absent: the JSON body's members become the children (objects " +
        'nest, arrays repeat the element, names must be XML names).',
    }),
  ),
  maxResponseBytes: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 64 * 1024 * 1024,
      description: 'Largest SOAP response read (default 1 MiB); past it: 502.',
    }),
  ),
  maxDepth: Type.Optional(
    Type.Integer({
      minimum: 4,
      maximum: MAX_DEPTH,
      description:
        'Deepest element nesting accepted in a SOAP response and in a JSON body mapped to XML (default 64).',
    }),
  ),
};

export const SoapSpec = Type.Object(
  {
    ...common,
    elementForm: Type.Optional(
      Type.Union([Type.Literal('qualified'), Type.Literal('unqualified')], {
        description:
          "Children in the operation's namespace (qualified, the default: the WSDL's elementFormDefault) or in none.",
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Translate this route to a SOAP operation of the service: the JSON body (and path, query) becomes the ' +
      'envelope, the XML answer becomes JSON, a SOAP Fault a problem (client 422, server 502). POST only.',
  },
);
export type SoapSpec = Static<typeof SoapSpec>;

export const SoapHandler = Type.Object(
  {
    type: Type.Literal('soap'),
    upstream: Type.String({ minLength: 1 }),
    ...common,
    version: versions,
    action: Type.String({ maxLength: 1024, pattern: ACTION }),
    qualified: Type.Boolean(),
    maxResponseBytes: Type.Integer({ minimum: 1 }),
    maxDepth: Type.Integer({ minimum: 4, maximum: MAX_DEPTH }),
  },
  { additionalProperties: false },
);
export type SoapHandler = Static<typeof SoapHandler>;

/** What both sides check: the pattern, and each element's value a template over declared parameters. */
function checkSoap(c: { pattern?: string; elements?: readonly { path: string; value: string }[] }) {
  const problems: ConfigProblem[] = [];
  const params = new PathParams(c.pattern, 'pattern', problems);
  c.elements?.forEach((e, j) => {
    const field = `elements[${j}].value`;
    const t = compileTemplate(e.value, true);
    const p =
      'error' in t
        ? { field, message: `the value ${t.error}` }
        : t.parts.some((p) => typeof p === 'string' && xmlText(p) === null)
          ? { field, message: 'the value holds a character XML 1.0 does not allow' }
          : params.undeclared(t, field);
    if (p !== null) problems.push(p);
  });
  return problems;
}

export const manifest = handlerManifest({
  kind: 'soap',
  schema: SoapHandler,
  upstreams: (h) => [{ field: 'upstream', id: h.upstream }],
  checks: checkSoap,
  // The body is read whole (with the body limit) before the handler: it becomes the envelope.
  needs: { requestBody: true },
  route: {
    field: 'soap',
    schema: SoapSpec,
    checks: checkSoap,
    methods: ['POST'],
    backends: () => [], // the route's service
    upstreams: (_c, _urls, service) => [{ url: service }],
    entry: (c, ids) => ({
      type: 'soap' as const,
      upstream: ids[0],
      version: c.version ?? '1.1',
      ...(c.path !== undefined && { path: c.path }),
      action: c.action ?? '',
      operation: c.operation,
      ...(c.namespace !== undefined && { namespace: c.namespace }),
      qualified: c.elementForm !== 'unqualified',
      ...(c.pattern !== undefined && { pattern: c.pattern }),
      ...(c.elements !== undefined && {
        elements: c.elements.map((e) => ({ path: e.path, value: e.value })),
      }),
      maxResponseBytes: c.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
      maxDepth: c.maxDepth ?? DEFAULT_MAX_DEPTH,
    }),
  },
});
