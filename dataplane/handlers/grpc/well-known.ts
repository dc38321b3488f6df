/**
 * The google.protobuf well-known types' own JSON forms (proto3 JSON mapping): Timestamp as an
 * RFC 3339 string, Duration as "1.5s", the wrappers as their value, FieldMask as "a.b,cD",
 * Struct / Value / ListValue as plain JSON. Empty and Any keep the message form. `read` turns a
 * JSON value into protobufjs's fromObject input (or throws JsonMismatch); `write` turns
 * toObject's output (longs as strings) into the JSON value. Field names are those of protobufjs's
 * bundled definitions (lowerCamelCase: numberValue, structValue).
 */
import { JsonMismatch } from './json-mismatch.ts';

type Obj = Record<string, unknown>;

export interface WellKnown {
  read(v: unknown, at: string): Obj;
  write(o: Obj): unknown;
}

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/i;
const DURATION = /^(-)?(\d+)(?:\.(\d{1,9}))?s$/;
const MAX_DURATION_S = 315_576_000_000;
const MIN_TIMESTAMP_S = -62_135_596_800; // 0001-01-01T00:00:00Z
const MAX_TIMESTAMP_S = 253_402_300_799; // 9999-12-31T23:59:59Z

const nanosOf = (digits: string | undefined) => (digits ? Number(digits.padEnd(9, '0')) : 0);

/** Fractional seconds in 0, 3, 6 or 9 digits, as the mapping writes them. */
function fraction(nanos: number): string {
  if (nanos === 0) return '';
  const nine = String(Math.abs(nanos)).padStart(9, '0');
  return `.${nine.endsWith('000000') ? nine.slice(0, 3) : nine.endsWith('000') ? nine.slice(0, 6) : nine}`;
}

const timestamp: WellKnown = {
  read(v, at) {
    const m = typeof v === 'string' ? TIMESTAMP.exec(v) : null;
    if (m === null) throw new JsonMismatch(at, 'must be an RFC 3339 timestamp, e.g. "2024-01-31T12:00:00Z"');
    const [, y, mo, d, h, mi, s, frac, zone] = m;
    let ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
    const check = new Date(ms);
    if (Number.isNaN(ms) || check.getUTCDate() !== Number(d) || check.getUTCMonth() !== Number(mo) - 1)
      throw new JsonMismatch(at, `"${v}" is not a date`);
    if (zone.toUpperCase() !== 'Z') {
      const sign = zone[0] === '-' ? -1 : 1;
      ms -= sign * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6))) * 60_000;
    }
    const seconds = Math.floor(ms / 1000);
    if (seconds < MIN_TIMESTAMP_S || seconds > MAX_TIMESTAMP_S)
      throw new JsonMismatch(at, 'is outside 0001-01-01 to 9999-12-31');
    return { seconds: String(seconds), nanos: nanosOf(frac) };
  },
  write(o) {
    const seconds = Number(o.seconds ?? 0);
    const date = new Date(seconds * 1000).toISOString().slice(0, 19);
    return `${date}${fraction(Number(o.nanos ?? 0))}Z`;
  },
};

const duration: WellKnown = {
  read(v, at) {
    const m = typeof v === 'string' ? DURATION.exec(v) : null;
    if (m === null || Number(m[2]) > MAX_DURATION_S)
      throw new JsonMismatch(at, 'must be a duration in seconds, e.g. "1.5s"');
    const sign = m[1] ? -1 : 1;
    return { seconds: m[1] && m[2] !== '0' ? `-${m[2]}` : m[2], nanos: sign * nanosOf(m[3]) };
  },
  write(o) {
    const seconds = BigInt(String(o.seconds ?? 0));
    const nanos = Number(o.nanos ?? 0);
    const negative = seconds < 0n || nanos < 0;
    return `${negative ? '-' : ''}${seconds < 0n ? -seconds : seconds}${fraction(nanos)}s`;
  },
};

const fieldMask: WellKnown = {
  read(v, at) {
    if (typeof v !== 'string') throw new JsonMismatch(at, 'must be a string of comma-separated field paths');
    const paths = v === '' ? [] : v.split(',').map((p) => p.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`));
    return { paths };
  },
  write(o) {
    return ((o.paths as string[] | undefined) ?? [])
      .map((p) => p.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()))
      .join(',');
  },
};

/** google.protobuf.Value from any JSON value. */
function valueIn(v: unknown, at: string): Obj {
  if (v === null) return { nullValue: 0 };
  if (typeof v === 'number') return { numberValue: v };
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map((x, i) => valueIn(x, `${at}[${i}]`)) } };
  if (typeof v === 'object') return { structValue: structIn(v, at) };
  throw new JsonMismatch(at, 'is not a JSON value');
}

function structIn(v: unknown, at: string): Obj {
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw new JsonMismatch(at, 'must be an object');
  const fields: Obj = {};
  for (const k in v as Obj) fields[k] = valueIn((v as Obj)[k], `${at}.${k}`);
  return { fields };
}

function valueOut(o: Obj): unknown {
  if ('structValue' in o) return structOut(o.structValue as Obj);
  if ('listValue' in o) return (((o.listValue as Obj).values as Obj[] | undefined) ?? []).map(valueOut);
  if ('numberValue' in o) return o.numberValue;
  if ('stringValue' in o) return o.stringValue;
  if ('boolValue' in o) return o.boolValue;
  return null;
}

function structOut(o: Obj): Obj {
  const out: Obj = {};
  const fields = (o.fields as Obj | undefined) ?? {};
  for (const k in fields) out[k] = valueOut(fields[k] as Obj);
  return out;
}

/** A wrapper's value: read as its scalar (by `scalar`, the same check a field of that type gets). */
const wrapper = (zero: unknown, scalar: (v: unknown, at: string) => unknown): WellKnown => ({
  read: (v, at) => ({ value: scalar(v, at) }),
  write: (o) => o.value ?? zero,
});

/** The well-known types by full name, given the scalar check of json.ts for the wrappers. */
export function wellKnownTypes(
  scalar: (type: string, v: unknown, at: string) => unknown,
): Map<string, WellKnown> {
  const w = (type: string, zero: unknown) => wrapper(zero, (v, at) => scalar(type, v, at));
  return new Map<string, WellKnown>([
    ['.google.protobuf.Timestamp', timestamp],
    ['.google.protobuf.Duration', duration],
    ['.google.protobuf.FieldMask', fieldMask],
    ['.google.protobuf.Struct', { read: structIn, write: structOut }],
    ['.google.protobuf.Value', { read: valueIn, write: valueOut }],
    [
      '.google.protobuf.ListValue',
      {
        read: (v, at) => {
          if (!Array.isArray(v)) throw new JsonMismatch(at, 'must be an array');
          return { values: v.map((x, i) => valueIn(x, `${at}[${i}]`)) };
        },
        write: (o) => ((o.values as Obj[] | undefined) ?? []).map(valueOut),
      },
    ],
    ['.google.protobuf.DoubleValue', w('double', 0)],
    ['.google.protobuf.FloatValue', w('float', 0)],
    ['.google.protobuf.Int64Value', w('int64', '0')],
    ['.google.protobuf.UInt64Value', w('uint64', '0')],
    ['.google.protobuf.Int32Value', w('int32', 0)],
    ['.google.protobuf.UInt32Value', w('uint32', 0)],
    ['.google.protobuf.BoolValue', w('bool', false)],
    ['.google.protobuf.StringValue', w('string', '')],
    ['.google.protobuf.BytesValue', w('bytes', '')],
  ]);
}
