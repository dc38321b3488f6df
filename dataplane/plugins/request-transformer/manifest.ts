/**
 * request-transformer config (Kong's shape, grown): headers, query parameters and JSON body
 * fields, each with remove ("name"), rename ("old:new"), replace (only when present), add (only
 * when absent) and append (headers and query), plus an upstream path rewrite. Values are
 * templates (config/template.ts); the spec writes `add.headers: ["X-Gateway-Version:v1"]`, which
 * stays what it was. Literal values can never carry CR, LF or NUL: the patterns reject them
 * here, at the door; templates are compiled here too, and an unknown source or an undeclared
 * path parameter is refused naming its field.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { ConfigProblem } from '../../config/config-problem.ts';
import { pluginManifest } from '../../config/manifest.ts';
import { compileTemplate } from '../../config/template.ts';
import {
  checkTemplates,
  fieldPaths,
  fieldRenames,
  fieldValues,
  headerNames,
  headerRenames,
  headerValues,
  queryNames,
  queryRenames,
  queryValues,
  PATH_PATTERN,
  PATH_TEMPLATE,
  PathParams,
  section,
} from '../../config/transform-schema.ts';

export const RequestTransformerConfig = Type.Object(
  {
    remove: section(
      {
        headers: Type.Optional(headerNames('Headers removed from the request.')),
        query: Type.Optional(queryNames('Query parameters removed (every occurrence).')),
        body: Type.Optional(fieldPaths('JSON body fields removed.')),
      },
      'Removed first.',
    ),
    rename: section(
      {
        headers: Type.Optional(headerRenames('Headers renamed, keeping their values.')),
        query: Type.Optional(queryRenames('Query parameters renamed, keeping their values.')),
        body: Type.Optional(fieldRenames('JSON body fields moved, keeping their values.')),
      },
      'Renamed second.',
    ),
    replace: section(
      {
        headers: Type.Optional(headerValues('Headers whose value is replaced, only when present.')),
        query: Type.Optional(queryValues('Query parameters whose value is replaced, only when present.')),
        body: Type.Optional(fieldValues('JSON body fields replaced, only when present.')),
      },
      'Replaced third.',
    ),
    add: section(
      {
        headers: Type.Optional(headerValues('Headers added when absent.')),
        query: Type.Optional(queryValues('Query parameters added when absent.')),
        body: Type.Optional(fieldValues('JSON body fields added when absent (objects made on the way).')),
      },
      'Added fourth.',
    ),
    append: section(
      {
        headers: Type.Optional(headerValues('Headers added, next to any value already present.')),
        query: Type.Optional(queryValues('Query parameters added, after any already present.')),
      },
      'Appended last.',
    ),
    path: Type.Optional(
      Type.Object(
        {
          pattern: Type.String({
            pattern: PATH_PATTERN,
            maxLength: 2048,
            description: 'The request path, a "{name}" for each segment captured, e.g. "/users/{id}".',
          }),
          rewrite: Type.String({
            pattern: PATH_TEMPLATE,
            maxLength: 2048,
            description:
              'The upstream path, e.g. "/v2/accounts/{{ path.id }}"; each value is one encoded segment.',
          }),
        },
        {
          additionalProperties: false,
          description:
            'Rewrites the upstream path of requests whose path matches the pattern (the upstream base path is still prepended).',
        },
      ),
    ),
    maxBodyBytes: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 64 * 1024 * 1024,
        description: 'JSON bodies larger than this pass untouched (counted). Default 1 MiB.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Applied in order: remove, rename, replace, add, append; templates read the request as it came.',
  },
);
export type RequestTransformerConfig = Static<typeof RequestTransformerConfig>;

function checkRequestTransformer(c: RequestTransformerConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const params = new PathParams(c.path?.pattern, 'path.pattern', problems);
  if (c.path) {
    for (const seg of c.path.rewrite.split('/').slice(1)) {
      const t = compileTemplate(seg);
      if ('error' in t) problems.push({ field: 'path.rewrite', message: `the rewrite ${t.error}` });
      else if (t.parts.some((p) => typeof p === 'string' && /[{}]/.test(p)))
        problems.push({
          field: 'path.rewrite',
          message: 'the rewrite has "{" or "}" outside a {{ template }}',
        });
    }
  }
  problems.push(
    ...checkTemplates(c as Record<string, unknown>, ['headers', 'query', 'body'], (t, field) =>
      params.undeclared(t, field),
    ),
  );
  if (c.path) {
    const t = compileTemplate(c.path.rewrite);
    if (!('error' in t)) {
      const p = params.undeclared(t, 'path.rewrite');
      if (p) problems.push(p);
    }
  }
  return problems;
}

export const manifest = pluginManifest({
  name: 'request-transformer',
  phase: 'transform-request',
  schema: RequestTransformerConfig,
  checks: checkRequestTransformer,
});
