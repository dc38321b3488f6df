/**
 * The request envelope. Compiled once per route: the markup around the operation's children, and
 * the declared children as one template whose literal parts are markup (written by the config,
 * escaped then) and whose lookups are rendered per request through the XML text escaper; so a
 * value from the request is always a text node, never structure. Without declared children the
 * JSON body is mapped under the operation element (jsonToXml), every name checked as an XML
 * name and every value escaped the same way.
 */
import { type Part, type Template, template, xmlText } from '../../config/template.ts';
import type { SoapHandler } from './manifest.ts';

export const ENVELOPE_NS = {
  '1.1': 'http://schemas.xmlsoap.org/soap/envelope/',
  '1.2': 'http://www.w3.org/2003/05/soap-envelope',
} as const;

export interface CompiledEnvelope {
  /** Up to and including the operation's start tag. */
  head: string;
  /** From the operation's end tag to the end. */
  tail: string;
  /** The operation's children when declared; null: the JSON body is mapped. */
  children: Template | null;
}

export function compileEnvelope(h: SoapHandler): CompiledEnvelope {
  const op = h.namespace !== undefined && !h.qualified ? `o:${h.operation}` : h.operation;
  const xmlns = h.namespace === undefined ? '' : ` xmlns${h.qualified ? '' : ':o'}="${xmlText(h.namespace)}"`;
  return {
    head:
      '<?xml version="1.0" encoding="utf-8"?>' +
      `<soap:Envelope xmlns:soap="${ENVELOPE_NS[h.version]}"><soap:Body><${op}${xmlns}>`,
    tail: `</${op}></soap:Body></soap:Envelope>`,
    children: h.elements === undefined ? null : compileChildren(h.elements),
  };
}

/**
 * The declared elements as one template. Paths open their parents; consecutive entries share the
 * parents they have in common ("order/id", "order/sku" → <order><id/><sku/></order>).
 */
function compileChildren(elements: readonly { path: string; value: string }[]): Template {
  const parts: Part[] = [];
  const markup = (s: string) => {
    const last = parts.length - 1;
    if (last >= 0 && typeof parts[last] === 'string') parts[last] += s;
    else parts.push(s);
  };
  let open: string[] = [];
  for (const e of elements) {
    const names = e.path.split('/');
    const parents = names.slice(0, -1);
    let shared = 0;
    while (shared < open.length && shared < parents.length && open[shared] === parents[shared]) shared++;
    for (let k = open.length - 1; k >= shared; k--) markup(`</${open[k]}>`);
    for (let k = shared; k < parents.length; k++) markup(`<${parents[k]}>`);
    open = parents;
    const leaf = names[names.length - 1];
    markup(`<${leaf}>`);
    for (const p of template(e.value, true).parts)
      if (typeof p === 'string') markup(xmlText(p) as string);
      else parts.push(p);
    markup(`</${leaf}>`);
  }
  for (let k = open.length - 1; k >= 0; k--) markup(`</${open[k]}>`);
  const literal = parts.every((p) => typeof p === 'string') ? parts.join('') : null;
  return { parts, literal };
}

/**
 * A JSON name that can be an element name (NCName: no prefix, no colon). Unicode letters are
 * allowed; names starting with "xml" are reserved to XML itself.
 */
const ELEMENT_NAME = /^(?![Xx][Mm][Ll])[\p{L}_][\p{L}\p{N}\p{Mn}\p{Mc}._\u00B7-]*$/u;

/** Why a JSON body cannot be mapped, in words for the problem's detail. */
export class MappingError extends Error {}

/**
 * The JSON body's members as the operation's children: objects nest, an array repeats its
 * member's element, scalars are escaped text, null an empty element. At most `maxDepth` levels.
 */
export function jsonToXml(body: unknown, maxDepth: number): string {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new MappingError('the JSON body must be an object: its members become the operation’s elements');
  let out = '';
  const members = (obj: object, depth: number) => {
    for (const [name, value] of Object.entries(obj)) {
      if (!ELEMENT_NAME.test(name))
        throw new MappingError(`the member ${JSON.stringify(name)} is not an XML element name`);
      if (Array.isArray(value)) for (const item of value) element(name, item, depth);
      else element(name, value, depth);
    }
  };
  const element = (name: string, value: unknown, depth: number) => {
    if (depth > maxDepth) throw new MappingError(`the JSON body nests deeper than ${maxDepth} levels`);
    if (value === null) {
      out += `<${name}/>`;
      return;
    }
    if (Array.isArray(value))
      throw new MappingError(`the member ${JSON.stringify(name)} holds an array in an array: not mappable`);
    out += `<${name}>`;
    if (typeof value === 'object') members(value, depth + 1);
    else {
      const text = xmlText(String(value));
      if (text === null)
        throw new MappingError(`the member ${JSON.stringify(name)} holds a character XML 1.0 does not allow`);
      out += text;
    }
    out += `</${name}>`;
  };
  members(body, 1);
  return out;
}
