/**
 * The gRPC request message of one HTTP request, by the route's mapping (google.api.http's
 * rules): the body is the whole message ("*") or one field of it, the path template's variables
 * (config/http-template.ts: one segment or several, a dotted name setting a nested field) and
 * (unless the body is the whole message) the query's parameters set fields, a query name being a
 * field path ("page.size", proto or JSON names). Later sources win: body, then query, then path.
 * Everything goes through the strict JSON check (json.ts), so a value from the URL is held to
 * its field's type like one from the body.
 */
import type protobuf from 'protobufjs';
import { type HttpTemplate, matchTemplate } from '../../config/http-template.ts';
import { scanJson } from '../../config/json-scan.ts';
import { fromJson } from './json.ts';
import { JsonMismatch } from './json-mismatch.ts';
import { fieldNamed } from '../../config/proto-files.ts';

export interface BoundMapping {
  request: protobuf.Type;
  /** The request path's template ("/v1/items/{item_id}"); null: any path of the route, no parameters. */
  pattern: HttpTemplate | null;
  /** "*": the body is the message; a field: the body is that field; null: no body. */
  body: '*' | protobuf.Field | null;
}

type Obj = Record<string, unknown>;

/** The path does not fit the route's pattern. */
export const NO_MATCH = Symbol('no match');

/** The fromObject input of the request, NO_MATCH, or a JsonMismatch thrown (→ 400). */
export function requestObject(
  m: BoundMapping,
  path: string,
  query: string,
  body: Buffer | null,
): Obj | typeof NO_MATCH {
  let params: Record<string, string> | null = null;
  if (m.pattern !== null) {
    params = matchTemplate(m.pattern, path);
    if (params === null) return NO_MATCH;
  }
  let out: Obj = {};
  if (body !== null && body.length > 0) {
    if (m.body === null) throw new JsonMismatch('', 'this route takes no body');
    const text = body.toString('utf8');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new JsonMismatch('', 'is not JSON');
    }
    // JSON.parse keeps a duplicate's last value, the service's parser might keep the first: refused.
    const dup = scanJson(text).duplicate;
    if (dup !== null) {
      const field =
        m.body === '*' ? dup.path : `${m.body.name}${dup.path.startsWith('[') ? '' : '.'}${dup.path}`;
      throw new JsonMismatch(
        field,
        `the key ${JSON.stringify(dup.key)} is given twice`,
        'SLC_ERR_JSON_DUPLICATE_KEY',
      );
    }
    out = m.body === '*' ? fromJson(m.request, json) : fromJson(m.request, { [m.body.name]: json });
  }
  if (query !== '') {
    if (m.body === '*')
      throw new JsonMismatch('', 'this route takes no query parameters (the body is the whole message)');
    Object.assign(out, fromJson(m.request, queryObject(m.request, query)));
  }
  if (params !== null) {
    // A dotted name ("book.name") sets a field of a nested message, over what body and query set.
    const given: Obj = {};
    for (const name in params) {
      const names = name.split('.');
      let t = m.request;
      let obj = given;
      let from: Obj | undefined = out; // what body and query set at this level, kept
      for (let i = 0; i < names.length - 1; i++) {
        const f = fieldNamed(t, names[i])!;
        const had: unknown = from?.[f.name] ?? from?.[names[i]];
        from = had !== null && typeof had === 'object' ? (had as Obj) : undefined;
        obj[names[i]] ??= { ...from };
        obj = obj[names[i]] as Obj;
        t = f.resolvedType as protobuf.Type;
      }
      obj[names[names.length - 1]] = paramValue(fieldNamed(t, names[names.length - 1])!, params[name]);
    }
    Object.assign(out, fromJson(m.request, given));
  }
  return out;
}

/** The query as a JSON object: dotted names nest, a repeated field collects its values. */
function queryObject(type: protobuf.Type, query: string): Obj {
  const root: Obj = {};
  for (const [name, value] of new URLSearchParams(query)) {
    const names = name.split('.');
    let t = type;
    let obj = root;
    for (let i = 0; i < names.length; i++) {
      const f = fieldNamed(t, names[i]);
      const at = names.slice(0, i + 1).join('.');
      if (f === undefined) throw new JsonMismatch(at, `is not a field of ${t.name}`);
      const rt = f.resolvedType;
      const message = rt !== null && 'fieldsArray' in rt;
      if (i < names.length - 1) {
        if (!message || f.repeated || f.map)
          throw new JsonMismatch(at, 'is not a message field to select in');
        obj[names[i]] ??= {};
        obj = obj[names[i]] as Obj;
        t = rt as protobuf.Type;
        continue;
      }
      if (message || f.map) throw new JsonMismatch(at, 'cannot be set from the query (a message or a map)');
      const v = paramValue(f, value);
      if (f.repeated) {
        obj[names[i]] ??= [];
        (obj[names[i]] as unknown[]).push(v);
      } else if (names[i] in obj) throw new JsonMismatch(at, 'is given twice');
      else obj[names[i]] = v;
    }
  }
  return root;
}

/** A URL string as the JSON value of its field: true/false for a bool, a number for an enum's number. */
function paramValue(f: protobuf.Field, text: string): unknown {
  if (f.type === 'bool') return text === 'true' ? true : text === 'false' ? false : text;
  if (f.resolvedType !== null && !('fieldsArray' in f.resolvedType) && /^-?[0-9]+$/.test(text))
    return Number(text);
  return text;
}
