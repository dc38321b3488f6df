/**
 * The config shapes both transformers (request- and response-transformer) share (Kong's "Name:value" strings), and the check that
 * compiles every template in them, naming the field of the first problem. Plain data: the
 * controller reads it through the manifests.
 */
import { type TProperties, type TSchema, Type } from '@sinclair/typebox';
import type { ConfigProblem } from './config-problem.ts';
import { HEADER_NAME_CHARS, HEADER_VALUE_CHARS } from './http-grammar.ts';
import { compileTemplate, pathNames, type Template } from './template.ts';

/** A query parameter name the config may write (unreserved characters). */
export const QUERY_NAME_CHARS = '[A-Za-z0-9._~-]+';
/** A path pattern: literal path characters (pchar without ";"), "{name}" parameters, "/". */
export const PATH_PATTERN = "^(/([A-Za-z0-9\\-._~!$&'()*+,=:@%]*|\\{[A-Za-z_][A-Za-z0-9_]*\\}))+$";
/** A path template: literal path characters, "/" and {{ templates }}. */
export const PATH_TEMPLATE = "^/[A-Za-z0-9\\-._~!$&'()*+,=:@%/{} ]*$";
/** A JSON field path: names joined by ".", objects only ("a.b.c"). */
export const FIELD_PATH_CHARS = '[A-Za-z0-9_$@-]+(?:\\.[A-Za-z0-9_$@-]+)*';

const list = <T extends TSchema>(item: T, description: string) =>
  Type.Array(item, { maxItems: 64, description });
const names = (chars: string, what: string, description: string) =>
  list(Type.String({ pattern: `^${chars}$`, maxLength: 256, description: what }), description);
const pairs = (from: string, to: string, what: string, description: string) =>
  list(Type.String({ pattern: `^${from}:${to}$`, maxLength: 8192, description: what }), description);

export const headerNames = (d: string) => names(HEADER_NAME_CHARS, 'Header name', d);
export const headerRenames = (d: string) =>
  pairs(HEADER_NAME_CHARS, HEADER_NAME_CHARS, '"Old-Name:New-Name"', d);
/** Values are templates; literal CR, LF and NUL are refused by the pattern, looked-up ones per request. */
export const headerValues = (d: string) =>
  pairs(HEADER_NAME_CHARS, HEADER_VALUE_CHARS, '"Header-Name:value" (the value may hold {{ templates }})', d);
export const queryNames = (d: string) => names(QUERY_NAME_CHARS, 'Query parameter name', d);
export const queryRenames = (d: string) => pairs(QUERY_NAME_CHARS, QUERY_NAME_CHARS, '"old:new"', d);
export const queryValues = (d: string) =>
  pairs(QUERY_NAME_CHARS, '[^\\r\\n\\x00]*', '"name:value" (the value may hold {{ templates }})', d);
export const fieldPaths = (d: string) => names(FIELD_PATH_CHARS, 'JSON field path, e.g. "a.b.c"', d);
export const fieldRenames = (d: string) => pairs(FIELD_PATH_CHARS, FIELD_PATH_CHARS, '"a.b:c.d"', d);
export const fieldValues = (d: string) =>
  pairs(
    FIELD_PATH_CHARS,
    '[^\\x00]*',
    '"a.b:value": the value is always set as a JSON string ({{ templates }} allowed)',
    d,
  );

export const section = <P extends TProperties>(props: P, description: string) =>
  Type.Optional(Type.Object(props, { additionalProperties: false, description }));

/** "name:value" split at the first colon. */
export function splitPair(entry: string): [name: string, value: string] {
  const colon = entry.indexOf(':');
  return [entry.slice(0, colon).trim(), entry.slice(colon + 1).trim()];
}

/** The sections and lists of a transformer config that hold "name:template" values. */
export const VALUE_VERBS = ['replace', 'add', 'append'] as const;

/**
 * Compiles every template value of the config (the verbs' "name:value" lists), calling `each`
 * with the compiled template so the caller can add its own rules (path parameters declared);
 * returns the problems, each naming its field.
 */
export function checkTemplates(
  config: Record<string, unknown>,
  lists: readonly string[],
  each?: (t: Template, field: string) => ConfigProblem | null,
): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const verb of VALUE_VERBS) {
    const section = config[verb] as Record<string, string[] | undefined> | undefined;
    for (const name of lists) {
      section?.[name]?.forEach((entry, i) => {
        const field = `${verb}.${name}[${i}]`;
        const t = compileTemplate(splitPair(entry)[1]);
        if ('error' in t) problems.push({ field, message: `the value ${t.error}` });
        else {
          const p = each?.(t, field);
          if (p) problems.push(p);
        }
      });
    }
  }
  return problems;
}

/** A path pattern's parameter segment: "{name}". */
export const PATH_PARAM = /^\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

/** The parameter names a pattern declares, or an error. */
export function patternParams(pattern: string): string[] | { error: string } {
  const names: string[] = [];
  for (const seg of pattern.split('/').slice(1)) {
    const m = PATH_PARAM.exec(seg);
    if (m === null) {
      if (seg.includes('{') || seg.includes('}'))
        return { error: `segment ${JSON.stringify(seg)} must be a literal or a whole "{name}"` };
      continue;
    }
    if (names.includes(m[1])) return { error: `declares {${m[1]}} twice` };
    names.push(m[1]);
  }
  return names;
}

/**
 * The parameters a config's path pattern declares, for the templates that read them
 * ({{ path.NAME }}): a problem of the pattern itself is reported once, at construction, and
 * each template reading an undeclared parameter gets its own. `field` names the pattern in
 * messages (e.g. "pattern", "path.pattern").
 */
export class PathParams {
  readonly #declared: readonly string[];
  readonly #field: string;
  readonly #given: boolean;

  constructor(pattern: string | undefined, field: string, problems: ConfigProblem[]) {
    this.#field = field;
    this.#given = pattern !== undefined;
    const params = pattern === undefined ? [] : patternParams(pattern);
    if ('error' in params) problems.push({ field, message: `the pattern ${params.error}` });
    this.#declared = 'error' in params ? [] : params;
  }

  /** The problem of `t` (written at `field`) when it reads a parameter the pattern does not declare. */
  undeclared(t: Template, field: string): ConfigProblem | null {
    const missing = pathNames(t).find((n) => !this.#declared.includes(n));
    if (missing === undefined) return null;
    return {
      field,
      message: this.#given
        ? `{{ path.${missing} }} is not a parameter of ${this.#field}`
        : `{{ path.${missing} }} needs ${this.#field} to declare {${missing}}`,
    };
  }
}
