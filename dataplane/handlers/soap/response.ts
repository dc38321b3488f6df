/**
 * The SOAP service's answer, read as untrusted XML: refused outright when it declares a DTD or
 * an entity (no external entity, no billion laughs: `<!DOCTYPE`, `<!ENTITY` and every other
 * `<!` declaration but comments and CDATA never reach the parser), refused past `maxDepth`
 * levels of nesting (the parser's own bound), and refused when it is not UTF-8 or not
 * well-formed XML 1.0. Well-formedness is checked by saxes, a conforming parser (jsdom's):
 * fast-xml-parser's validator checks syntax only and lets through an undeclared entity
 * (`&foo;`, `&nbsp;`), a character reference to what XML forbids (`&#0;`, `&#xD800;`), a raw
 * control character, an element after the root, `<` in an attribute, `]]>` in text, `--` in a
 * comment, a misplaced XML declaration. What is left is parsed by fast-xml-parser with
 * attributes ignored, namespace prefixes stripped, text kept as strings (repeated elements
 * become arrays), only XML's five predefined entities and character references decoded. The
 * Body's first element becomes the JSON answer; a Fault becomes a problem carrying its code and
 * string, never the XML.
 */
import { XMLParser } from 'fast-xml-parser';
import { SaxesParser } from 'saxes';
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
const REFERENCE = /&(?:#x([0-9A-Fa-f]+)|#([0-9]+)|(lt|gt|amp|quot|apos));/g;

/**
 * The parser's entity decoder: the five predefined entities and character references, nothing
 * else (fast-xml-parser's own decodes character references only together with HTML entities).
 * The document is well-formed by then: every reference is one of these, to a character XML allows.
 */
const XML_REFERENCES = {
  decode: (text: string) =>
    text.includes('&')
      ? text.replace(REFERENCE, (_ref, hex?: string, dec?: string, name?: string) =>
          name !== undefined
            ? PREDEFINED[name]
            : String.fromCodePoint(hex !== undefined ? Number.parseInt(hex, 16) : Number(dec)),
        )
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
    const notWellFormed = wellFormed(text);
    if (notWellFormed !== null) return bad(`the SOAP response is not well-formed XML (${notWellFormed})`);
    let xml: Record<string, unknown>;
    try {
      xml = this.#parser.parse(text);
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
 * Null when `text` is a well-formed XML 1.0 document, else where it stops being one, in our
 * words (the parser's message is not passed on). No handler is registered: saxes only checks.
 */
function wellFormed(text: string): string | null {
  const p = new SaxesParser();
  try {
    p.write(text).close();
    return null;
  } catch {
    return `line ${p.line}, column ${p.column}`;
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
