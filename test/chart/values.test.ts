/**
 * values.schema.json against values.yaml: every key the chart documents is declared (with a
 * type) in the schema, every object of the schema that lists its properties refuses others, and
 * helm refuses a misspelt key at any depth, naming it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CHART, helm, templateArgs } from './helm.ts';

interface Schema {
  type?: string | string[];
  $ref?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
  definitions?: Record<string, Schema>;
}

const schema = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as Schema;
const values = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as Record<string, unknown>;

/** A node with its local $ref ("#/definitions/x") followed. */
function resolve(node: Schema): Schema {
  if (node.$ref === undefined) return node;
  const name = node.$ref.replace(/^#\/definitions\//, '');
  const target = schema.definitions?.[name];
  if (target === undefined) throw new Error(`unresolved $ref ${node.$ref}`);
  return resolve(target);
}

/** Every key path of values.yaml, down to the values whose schema says nothing of their keys. */
function undeclared(value: unknown, node: Schema, path: string): string[] {
  const s = resolve(node);
  if (s.type === undefined) return [`${path}: no type`];
  if (value === null || typeof value !== 'object' || Array.isArray(value) || s.properties === undefined)
    return [];
  return Object.entries(value).flatMap(([k, v]) => {
    const child = s.properties?.[k];
    return child === undefined ? [`${path}${k}`] : undeclared(v, child, `${path}${k}.`);
  });
}

function open(node: Schema, path: string): string[] {
  const s = resolve(node);
  const here = s.properties !== undefined && s.additionalProperties !== false ? [path || '(root)'] : [];
  return [
    ...here,
    ...Object.entries(s.properties ?? {}).flatMap(([k, v]) => open(v, `${path}${k}.`)),
    ...(s.items ? open(s.items, `${path}[].`) : []),
  ];
}

describe('values.schema.json covers values.yaml', () => {
  it('every key of values.yaml (nested too) is declared in the schema with a type', () => {
    expect(Object.keys(values).length).toBeGreaterThan(10);
    expect(undeclared(values, schema, '')).toEqual([]);
  });

  it('the walk finds an undeclared key (the check can fail)', () => {
    expect(undeclared({ controller: { extraEnvs: [] } }, schema, '')).toEqual(['controller.extraEnvs']);
  });

  it('every object that lists its properties refuses any other (additionalProperties: false)', () => {
    expect(open(schema, '')).toEqual([]);
  });

  it.each([
    ['extraObject[0]', 'x', /\(root\): Additional property extraObject is not allowed/],
    ['controller.extraEnvs[0].name', 'X', /controller: Additional property extraEnvs is not allowed/],
    [
      'dataplane.serviceAccount.annotation.a',
      'b',
      /dataplane\.serviceAccount: Additional property annotation is not allowed/,
    ],
    ['metrics.podMonitor.enable', 'true', /metrics\.podMonitor: Additional property enable is not allowed/],
    ['tests.expectStatus', '700', /tests\.expectStatus: Must be less than or equal to 599/],
  ])('helm refuses %s=%s, naming it', async (key, value, message) => {
    const r = await helm([...templateArgs(), '--set', `${key}=${value}`]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(message);
  });
});
