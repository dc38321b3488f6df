/**
 * The .proto files of a grpc route (handlers/grpc), read by protobufjs: parsed into one Root (field names as
 * written, so both the proto name and its lowerCamelCase JSON name can be accepted), the
 * well-known google/protobuf imports taken from protobufjs's bundled copies, google/api imports
 * skipped (protobufjs reads an option such as google.api.http without its definition). Pure:
 * the controller checks a route with it and the data plane binds with it. A parse is memoized
 * by the files' text, so the door's check and the bind of one snapshot (and the next snapshots
 * with the same files) parse once.
 */
import { parseTemplate } from './http-template.ts';
import protobuf from 'protobufjs';
import type { ConfigProblem } from './config-problem.ts';

export interface ProtoFile {
  name: string;
  content: string;
}

export type Parsed = { root: protobuf.Root } | { problem: ConfigProblem };

const MEMO_SIZE = 64;
const memo = new Map<string, Parsed>();

export function parseProtos(files: readonly ProtoFile[]): Parsed {
  const key = JSON.stringify(files.map((f) => [f.name, f.content]));
  let parsed = memo.get(key);
  if (parsed === undefined) {
    parsed = parseUncached(files);
    if (memo.size >= MEMO_SIZE) memo.delete(memo.keys().next().value as string);
    memo.set(key, parsed);
  }
  return parsed;
}

function parseUncached(files: readonly ProtoFile[]): Parsed {
  const root = new protobuf.Root();
  const names = new Set(files.map((f) => f.name));
  const common = new Set<string>();
  for (let i = 0; i < files.length; i++) {
    let imports: string[];
    try {
      const r = protobuf.parse(files[i].content, root, { keepCase: true });
      imports = [...(r.imports ?? []), ...(r.weakImports ?? [])];
    } catch (err) {
      return { problem: { field: `protos[${i}].content`, message: `does not parse: ${messageOf(err)}` } };
    }
    for (const name of imports) {
      if (names.has(name) || name.startsWith('google/api/')) continue;
      const json = protobuf.common.get(name);
      if (json === null)
        return {
          problem: {
            field: `protos[${i}].content`,
            message: `imports "${name}", which is neither one of protos nor a google/protobuf well-known type`,
          },
        };
      if (!common.has(name)) root.addJSON(json.nested!);
      common.add(name);
    }
  }
  try {
    root.resolveAll();
  } catch (err) {
    return { problem: { field: 'protos', message: `do not resolve: ${messageOf(err)}` } };
  }
  return { root };
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

export interface FoundMethod {
  method: protobuf.Method;
  request: protobuf.Type;
  response: protobuf.Type;
  /** "/pkg.Service/Method", the HTTP/2 path of the call. */
  path: string;
}

/** The unary or server-streaming method `service`/`method`, or what is wrong (its field: "service" or "method"). */
export function findMethod(
  root: protobuf.Root,
  service: string,
  method: string,
): FoundMethod | ConfigProblem {
  const found = root.lookup(service.replace(/^\./, ''));
  if (!(found instanceof protobuf.Service))
    return { field: 'service', message: `no service "${service}" in protos` };
  const m = found.methods[method];
  if (m === undefined)
    return {
      field: 'method',
      message: `no method "${method}" in ${found.fullName.slice(1)} (it has ${Object.keys(found.methods).join(', ') || 'none'})`,
    };
  if (m.requestStream)
    return {
      field: 'method',
      message: `${method} streams its requests: only unary and server-streaming methods are served`,
    };
  return {
    method: m,
    request: m.resolvedRequestType!,
    response: m.resolvedResponseType!,
    path: `/${found.fullName.slice(1)}/${m.name}`,
  };
}

/** An HTTP binding: the verb, the path pattern ("/v1/items/{id}"), the body ("*", a field, or none). */
export interface HttpRule {
  verb: string;
  pattern: string;
  body?: string;
}

const VERBS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/**
 * The method's google.api.http option as its HTTP bindings, the option's own first and then its
 * additional_bindings in order, or why it cannot be read. A path is a template
 * (config/http-template.ts: multi-segment and nested-field variables, "*", "**", a custom verb).
 */
export function annotationOf(m: protobuf.Method): HttpRule[] | string {
  const opt = (m.parsedOptions as Record<string, unknown>[] | undefined)?.find(
    (o) => '(google.api.http)' in o,
  )?.['(google.api.http)'] as Record<string, unknown> | undefined;
  if (opt === undefined) return `${m.name} has no google.api.http option`;
  const more = opt.additional_bindings;
  const all = [opt, ...(more === undefined ? [] : Array.isArray(more) ? more : [more])] as Record<
    string,
    unknown
  >[];
  const rules: HttpRule[] = [];
  for (const [i, o] of all.entries()) {
    const which = i === 0 ? `${m.name}'s google.api.http option` : `${m.name}'s additional binding ${i}`;
    const verb = VERBS.find((v) => typeof o[v] === 'string');
    if (verb === undefined) return `${which} has no get, put, post, delete or patch`;
    const path = o[verb] as string;
    const t = parseTemplate(path);
    if ('error' in t) return `${which}: the path ${JSON.stringify(path)} ${t.error}`;
    const body = typeof o.body === 'string' && o.body !== '' ? o.body : undefined;
    rules.push({ verb: verb.toUpperCase(), pattern: path, ...(body && { body }) });
  }
  return rules;
}

/** The field named `name` (as written in the proto, or its lowerCamelCase JSON name). */
export function fieldNamed(type: protobuf.Type, name: string): protobuf.Field | undefined {
  return jsonFields(type).get(name);
}

const fieldMaps = new WeakMap<protobuf.Type, Map<string, protobuf.Field>>();

/** A message's fields by every name JSON may use: the proto name, the lowerCamelCase name, json_name. */
export function jsonFields(type: protobuf.Type): Map<string, protobuf.Field> {
  let map = fieldMaps.get(type);
  if (map === undefined) {
    map = new Map();
    for (const f of type.fieldsArray) {
      map.set(f.name, f);
      map.set(jsonName(f), f);
    }
    fieldMaps.set(type, map);
  }
  return map;
}

const jsonNames = new WeakMap<protobuf.Field, string>();

/** The field's proto3 JSON name: json_name, else the lowerCamelCase of its proto name. */
export function jsonName(f: protobuf.Field): string {
  let name = jsonNames.get(f);
  if (name === undefined) {
    const given = f.options?.json_name;
    name =
      typeof given === 'string' ? given : f.name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
    jsonNames.set(f, name);
  }
  return name;
}
