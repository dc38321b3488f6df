/**
 * response-transformer config: the response's headers (remove, rename, replace, add, append)
 * and JSON body fields (remove, rename, replace, add), in Kong's shape and order. Values are
 * templates over the request's sources (config/template.ts); path.NAME is the request
 * transformer's and is refused here. Bodies over maxBodyBytes, not JSON, or compressed pass
 * untouched (counted).
 */
import { type Static, Type } from '@sinclair/typebox';
import { pluginManifest } from '../../config/manifest.ts';
import { pathNames } from '../../config/template.ts';
import {
  checkTemplates,
  fieldPaths,
  fieldRenames,
  fieldValues,
  headerNames,
  headerRenames,
  headerValues,
  section,
} from '../../config/transform-schema.ts';

export const ResponseTransformerConfig = Type.Object(
  {
    remove: section(
      {
        headers: Type.Optional(headerNames('Headers removed from the response.')),
        body: Type.Optional(fieldPaths('JSON body fields removed.')),
      },
      'Removed first.',
    ),
    rename: section(
      {
        headers: Type.Optional(headerRenames('Headers renamed, keeping their values.')),
        body: Type.Optional(fieldRenames('JSON body fields moved, keeping their values.')),
      },
      'Renamed second.',
    ),
    replace: section(
      {
        headers: Type.Optional(headerValues('Headers whose value is replaced, only when present.')),
        body: Type.Optional(fieldValues('JSON body fields replaced, only when present.')),
      },
      'Replaced third.',
    ),
    add: section(
      {
        headers: Type.Optional(headerValues('Headers added when absent.')),
        body: Type.Optional(fieldValues('JSON body fields added when absent (objects made on the way).')),
      },
      'Added fourth.',
    ),
    append: section(
      { headers: Type.Optional(headerValues('Headers added, next to any value already present.')) },
      'Appended last.',
    ),
    maxBodyBytes: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 64 * 1024 * 1024,
        description:
          'JSON bodies larger than this pass untouched (counted); a body without length is buffered up to it. Default 1 MiB.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'Applied to the upstream response before it leaves: remove, rename, replace, add, append.',
  },
);
export type ResponseTransformerConfig = Static<typeof ResponseTransformerConfig>;

export const manifest = pluginManifest({
  name: 'response-transformer',
  phase: 'transform-response',
  schema: ResponseTransformerConfig,
  checks: (c) =>
    checkTemplates(c as Record<string, unknown>, ['headers', 'body'], (t, field) => {
      const p = pathNames(t)[0];
      return p === undefined
        ? null
        : {
            field,
            message: `{{ path.${p} }} is not available here (path parameters belong to request-transformer)`,
          };
    }),
  needs: { responseBody: true },
});
