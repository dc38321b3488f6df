/**
 * request-transformer config (Kong's shape). Each entry is "Name:value" (add, replace, append),
 * "Old:New" (rename) or "Name" (remove); the spec writes `add.headers: ["X-Gateway-Version:v1"]`.
 * Values can never carry CR, LF or NUL: the patterns reject them here, at the door.
 */
import { type Static, Type } from '@sinclair/typebox';
import { HEADER_NAME_CHARS, HEADER_VALUE_CHARS } from '../../config/http-grammar.ts';
import { pluginManifest } from '../../config/manifest.ts';

const TOKEN = HEADER_NAME_CHARS;
/** Header value: visible ASCII, space and tab, and obs-text; never CR, LF or NUL. */
const VALUE = HEADER_VALUE_CHARS;

const nameValues = (what: string) =>
  Type.Array(
    Type.String({ pattern: `^${TOKEN}:${VALUE}$`, maxLength: 8192, description: '"Header-Name:value"' }),
    {
      maxItems: 64,
      description: what,
    },
  );

export const RequestTransformerConfig = Type.Object(
  {
    remove: Type.Optional(
      Type.Object(
        {
          headers: Type.Optional(
            Type.Array(Type.String({ pattern: `^${TOKEN}$`, maxLength: 256, description: 'Header name' }), {
              maxItems: 64,
              description: 'Headers removed from the request.',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    rename: Type.Optional(
      Type.Object(
        {
          headers: Type.Optional(
            Type.Array(
              Type.String({
                pattern: `^${TOKEN}:${TOKEN}$`,
                maxLength: 513,
                description: '"Old-Name:New-Name"',
              }),
              {
                maxItems: 64,
                description: 'Headers renamed, keeping their values.',
              },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    replace: Type.Optional(
      Type.Object(
        { headers: Type.Optional(nameValues('Headers whose value is replaced, only when present.')) },
        { additionalProperties: false },
      ),
    ),
    add: Type.Optional(
      Type.Object(
        { headers: Type.Optional(nameValues('Headers added when absent.')) },
        { additionalProperties: false },
      ),
    ),
    append: Type.Optional(
      Type.Object(
        { headers: Type.Optional(nameValues('Headers added, next to any value already present.')) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false, description: 'Applied in order: remove, rename, replace, add, append.' },
);
export type RequestTransformerConfig = Static<typeof RequestTransformerConfig>;

export const manifest = pluginManifest({
  name: 'request-transformer',
  phase: 'transform-request',
  schema: RequestTransformerConfig,
  load: (): Promise<{ default: unknown }> => import('./index.ts'),
});
