/**
 * JSON ↔ protobuf by the proto3 JSON mapping. protobufjs's own fromObject coerces whatever it is
 * given (a string for a bool, an object for a string), so the request side is checked here
 * first, strictly: every member a field (by its proto name or lowerCamelCase JSON name), every
 * value of the field's JSON type (64-bit integers as numbers or decimal strings, bytes as
 * base64 or base64url, enums by name or number, null for the default), at most one member of
 * a oneof, the well-known types in their own forms (well-known.ts). The result is keyed by
 * proto field names, ready for fromObject. The response side is protobufjs's toObject with the
 * proto3 JSON options, then shaped: JSON names, defaults left out, well-known types' forms.
 */
import protobuf from 'protobufjs';
import { jsonFields, jsonName } from '../../config/proto-files.ts';
import { JsonMismatch } from './json-mismatch.ts';
import { wellKnownTypes } from './well-known.ts';

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const join = (at: string, key: string) => (at === '' ? key : `${at}.${key}`);

/** The JSON object `value` as a fromObject input for `type`; throws JsonMismatch. */
export function fromJson(type: protobuf.Type, value: unknown, at = ''): Obj {
  if (!isObject(value)) throw new JsonMismatch(at, `must be an object (${type.name})`);
  const fields = jsonFields(type);
  const out: Obj = {};
  let oneofs: Map<protobuf.OneOf, string> | null = null;
  for (const key in value) {
    const field = fields.get(key);
    const path = join(at, key);
    if (field === undefined) throw new JsonMismatch(path, `is not a field of ${type.name}`);
    if (field.name in out) throw new JsonMismatch(path, `sets ${field.name} a second time`);
    const v = value[key];
    if (v === null && !holdsNull(field)) continue; // proto3 JSON: null is the field's default
    if (field.partOf !== null && field.partOf.oneof.length > 1) {
      oneofs ??= new Map();
      const other = oneofs.get(field.partOf);
      if (other !== undefined) throw new JsonMismatch(path, `is in oneof ${field.partOf.name} with ${other}`);
      oneofs.set(field.partOf, key);
    }
    const converted = fieldValue(field, v, path);
    if (field.partOf === null && !field.repeated && isDefault(field, converted)) continue;
    out[field.name] = converted;
  }
  return out;
}

/**
 * A proto3 scalar at its default is not sent (implicit presence: the service reads it the same
 * either way); protobufjs would encode whatever is set. Fields in a oneof (proto3 optional
 * included) keep their presence.
 */
function isDefault(field: protobuf.Field, v: unknown): boolean {
  const rt = field.resolvedType;
  if (rt instanceof protobuf.Type) return false;
  if (rt instanceof protobuf.Enum) return v === 0 || (typeof v === 'string' && rt.values[v] === 0);
  return v === 0 || v === '0' || v === false || v === '';
}

/** A google.protobuf.Value holds JSON null as its NULL_VALUE; for any other field null means the default. */
const holdsNull = (f: protobuf.Field) => f.resolvedType?.fullName === '.google.protobuf.Value';

function fieldValue(field: protobuf.Field, v: unknown, at: string): unknown {
  if (field.map) {
    if (!isObject(v)) throw new JsonMismatch(at, 'must be an object (a map)');
    const out: Obj = {};
    const keyType = (field as unknown as protobuf.MapField).keyType;
    for (const k in v) {
      if (keyType === 'bool' ? k !== 'true' && k !== 'false' : keyType !== 'string' && !INTEGER.test(k))
        throw new JsonMismatch(`${at}.${k}`, `is not a ${keyType} map key`);
      if (v[k] === null && !holdsNull(field)) throw new JsonMismatch(`${at}.${k}`, 'must not be null');
      out[k] = single(field, v[k], `${at}.${k}`);
    }
    return out;
  }
  if (field.repeated) {
    if (!Array.isArray(v)) throw new JsonMismatch(at, 'must be an array');
    return v.map((item, i) => {
      if (item === null && !holdsNull(field)) throw new JsonMismatch(`${at}[${i}]`, 'must not be null');
      return single(field, item, `${at}[${i}]`);
    });
  }
  return single(field, v, at);
}

const INTEGER = /^-?(?:0|[1-9][0-9]*)$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/;

const RANGES: Record<string, [bigint, bigint]> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  sint32: [-(2n ** 31n), 2n ** 31n - 1n],
  sfixed32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  fixed32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  sint64: [-(2n ** 63n), 2n ** 63n - 1n],
  sfixed64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
  fixed64: [0n, 2n ** 64n - 1n],
};

/** One value of the field's type (an element of a repeated field, a map value). */
function single(field: protobuf.Field, v: unknown, at: string): unknown {
  const rt = field.resolvedType;
  if (rt instanceof protobuf.Type) {
    const known = WELL_KNOWN.get(rt.fullName);
    return known === undefined ? fromJson(rt, v, at) : known.read(v, at);
  }
  if (rt instanceof protobuf.Enum) {
    if (typeof v === 'string') {
      if (v in rt.values) return v;
      throw new JsonMismatch(at, `"${v}" is not a value of ${rt.name}`);
    }
    if (typeof v === 'number' && Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31) return v;
    throw new JsonMismatch(at, `must be a name of ${rt.name} or an int32`);
  }
  return scalar(field.type, v, at);
}

/** A value of scalar type `t` (string, bool, bytes, a number type). */
function scalar(t: string, v: unknown, at: string): unknown {
  switch (t) {
    case 'string':
      if (typeof v === 'string') return v;
      throw new JsonMismatch(at, 'must be a string');
    case 'bool':
      if (typeof v === 'boolean') return v;
      throw new JsonMismatch(at, 'must be true or false');
    case 'bytes':
      if (typeof v === 'string') {
        const std = v.replaceAll('-', '+').replaceAll('_', '/');
        if (BASE64.test(std)) return std;
      }
      throw new JsonMismatch(at, 'must be a base64 string');
    case 'double':
    case 'float': {
      if (typeof v === 'number') return v;
      if (v === 'NaN' || v === 'Infinity' || v === '-Infinity') return Number(v);
      if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
      throw new JsonMismatch(at, 'must be a number');
    }
  }
  const range = RANGES[t];
  let n: bigint | null = null;
  if (typeof v === 'number' && Number.isSafeInteger(v)) n = BigInt(v);
  else if (typeof v === 'string' && INTEGER.test(v)) n = BigInt(v);
  if (n === null || n < range[0] || n > range[1])
    throw new JsonMismatch(
      at,
      `must be an integer within ${t}${t.endsWith('64') ? ' (a number or a decimal string)' : ''}`,
    );
  return t.endsWith('64') ? n.toString() : Number(n);
}

const WELL_KNOWN = wellKnownTypes(scalar);

const TO_OBJECT: protobuf.IConversionOptions = { longs: String, enums: String, bytes: String, json: true };

/**
 * The decoded message as proto3 JSON: lowerCamelCase (or json_name) names, and a scalar at its
 * default left out even when the service put it on the wire (the mapping's default output).
 */
export function toJson(type: protobuf.Type, message: protobuf.Message): unknown {
  const obj = type.toObject(message, TO_OBJECT);
  const known = WELL_KNOWN.get(type.fullName);
  return known === undefined ? shaped(type, obj) : known.write(obj);
}

function shaped(type: protobuf.Type, obj: Obj): Obj {
  const out: Obj = {};
  for (const key in obj) {
    const f = type.fields[key];
    let v = obj[key];
    const rt = f.resolvedType;
    if (rt instanceof protobuf.Type) {
      if (v !== null && v !== undefined) {
        const known = WELL_KNOWN.get(rt.fullName);
        const one = known === undefined ? (x: Obj) => shaped(rt, x) : known.write;
        if (f.map) {
          const m: Obj = {};
          for (const k in v as Obj) m[k] = one((v as Obj)[k] as Obj);
          v = m;
        } else if (f.repeated) v = (v as Obj[]).map(one);
        else v = one(v as Obj);
      }
    } else if (f.partOf === null && !f.repeated && isDefault(f, v)) continue;
    out[jsonName(f)] = v;
  }
  return out;
}
