/**
 * The SOAP service's answer, read as untrusted XML: refused outright when it declares a DTD or
 * an entity (no external entity, no billion laughs: `<!DOCTYPE`, `<!ENTITY` and every other
 * `<!` declaration but comments and CDATA never reach the parser), refused past `maxDepth`
 * levels of nesting (the parser's own bound), and refused when it is not UTF-8. What is left
 * is validated and parsed by fast-xml-parser with attributes ignored, namespace prefixes stripped, text kept
 * as strings (repeated elements become arrays), only XML's five predefined entities and
 * character references decoded. The Body's first element becomes the JSON answer; a Fault
 * becomes a problem carrying its code and string, never the XML.
 */
import { XMLParser } from 'fast-xml-parser';
import type { ErrorCode } from '../../errors/codes.ts';

/** What the answer comes to: a JSON document, or a problem (code, detail, extension members). */
export type SoapAnswer =
  | { doc: Record<string, unknown> }
  | { code: ErrorCode; detail: string; extra?: Record<string, string> };

/** Any markup declaration (DOCTYPE, ENTITY, ELEMENT, ATTLIST, NOTATION); comments and CDATA are fine. */
const DECLARATION = /<!(?!--|\[CDATA\[)/;
/** Fault strings are cut to this length in the problem. */
const MAX_FAULT_CHARS = 1024;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** XML's predefined entities; a DTD never reaches the parser, so no other name can be defined. */
const PREDEFINED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };
const REFERENCE = /&(?:#x([0-9A-Fa-f]{1,6})|#([0-9]{1,7})|(lt|gt|amp|quot|apos));/g;
/** A character reference to something XML 1.0 forbids (NUL, C0 controls, surrogates) stays as written. */
const xmlChar = (c: number) =>
  c === 0x9 ||
  c === 0xa ||
  c === 0xd ||
  (c >= 0x20 && c <= 0xd7ff) ||
  (c >= 0xe000 && c <= 0xfffd) ||
  (c >= 0x10000 && c <= 0x10ffff);

/**
 * The parser's entity decoder: the five predefined entities and character references, nothing
 * else (fast-xml-parser's own decodes character references only together with HTML entities).
 */
const XML_REFERENCES = {
  decode: (text: string) =>
    text.includes('&')
      ? text.replace(REFERENCE, (ref, hex?: string, dec?: string, name?: string) => {
          if (name !== undefined) return PREDEFINED[name];
          const c = hex !== undefined ? Number.parseInt(hex, 16) : Number(dec);
          return xmlChar(c) ? String.fromCodePoint(c) : ref;
        })
      : text,
  setExternalEntities: () => {},
  addInputEntities: () => {},
  reset: () => {},
  setXmlVersion: () => {},
};

export class SoapReader {
  readonly #parser: XMLParser;
  readonly #maxDepth: number;

  constructor(maxDepth: number) {
    this.#maxDepth = maxDepth;
    this.#parser = new XMLParser({
      ignoreAttributes: true,
      removeNSPrefix: true,
      parseTagValue: false,
      trimValues: true,
      ignoreDeclaration: true,
      ignorePiTags: true,
      processEntities: true,
      entityDecoder: XML_REFERENCES,
      maxNestedTags: maxDepth,
      jPath: false, // Optimization: no path string built per tag (no callback here reads one)
    });
  }

  read(status: number, bytes: Buffer): SoapAnswer {
    let text: string;
    try {
      text = UTF8.decode(bytes);
    } catch {
      return bad('the SOAP response is not UTF-8');
    }
    if (DECLARATION.test(text))
      return { code: 'SLC_ERR_SOAP_DTD_REFUSED', detail: 'the SOAP response declares a DTD or an entity' };
    let xml: Record<string, unknown>;
    try {
      xml = this.#parser.parse(text, true); // validated too: the parser alone accepts mismatched tags
    } catch (err) {
      if (/nested/i.test((err as Error).message))
        return {
          code: 'SLC_ERR_SOAP_TOO_LARGE',
          detail: `the SOAP response nests deeper than ${this.#maxDepth} elements`,
        };
      return bad('the SOAP response is not well-formed XML');
    }
    const envelope = xml.Envelope;
    if (!isObject(envelope) || !('Body' in envelope))
      return bad(`the upstream answered ${status} without a SOAP envelope`);
    const body = envelope.Body;
    if (!isObject(body)) {
      if (body === '' && status >= 200 && status < 300) return { doc: {} }; // an empty Body: a one-way answer
      return bad('the SOAP Body holds no element');
    }
    if ('Fault' in body) return fault(body.Fault);
    if (status < 200 || status > 299) return bad(`the upstream answered ${status} without a SOAP Fault`);
    const first = Object.keys(body).find((k) => k !== '#text');
    if (first === undefined) return { doc: {} };
    const value = body[first];
    return { doc: { [first]: Array.isArray(value) ? value[0] : value } };
  }
}

/**
 * A Fault, 1.1 (faultcode, faultstring) or 1.2 (Code/Value, Reason/Text), whichever it holds:
 * Client / Sender is the caller's fault (422), anything else the service's (502).
 */
function fault(f: unknown): SoapAnswer {
  if (!isObject(f)) return bad('the SOAP Fault is empty');
  const code = text('faultcode' in f ? f.faultcode : isObject(f.Code) ? f.Code.Value : undefined);
  const reason = text('faultstring' in f ? f.faultstring : isObject(f.Reason) ? f.Reason.Text : undefined);
  // "soap:Client.Authentication" → "Client": the prefix and any dotted sub-code dropped.
  const local = code.slice(code.lastIndexOf(':') + 1).split('.')[0];
  const client = local === 'Client' || local === 'Sender';
  const faultString = reason.slice(0, MAX_FAULT_CHARS);
  return {
    code: client ? 'SLC_ERR_SOAP_CLIENT_FAULT' : 'SLC_ERR_SOAP_SERVER_FAULT',
    detail: faultString || `a SOAP Fault (${code || 'no code'})`,
    extra: { faultCode: code.slice(0, MAX_FAULT_CHARS), faultString },
  };
}

/** An element's text: a string, the first of repeated ones (Reason/Text in several languages), '' otherwise. */
function text(v: unknown): string {
  if (Array.isArray(v)) return text(v[0]);
  if (typeof v === 'string') return v;
  if (isObject(v) && typeof v['#text'] === 'string') return v['#text'];
  return '';
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const bad = (detail: string): SoapAnswer => ({ code: 'SLC_ERR_SOAP_BAD_RESPONSE', detail });
