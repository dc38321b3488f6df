/** proxy: the route's request goes to one upstream and its response streams back. */
import { type Static, Type } from '@sinclair/typebox';
import { handlerManifest } from '../../config/manifest.ts';

/** A weighted canary: `weight` percent of the requests go to `upstream` instead of the handler's. */
export const Canary = Type.Object(
  {
    upstream: Type.String({ minLength: 1 }),
    weight: Type.Integer({ minimum: 0, maximum: 100 }),
    /** Keep a caller on one side: by consumer id (after authentication) or by a request cookie's value. */
    sticky: Type.Optional(
      Type.Union([
        Type.Object({ consumer: Type.Literal(true) }, { additionalProperties: false }),
        Type.Object({ cookie: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
      ]),
    ),
  },
  { additionalProperties: false },
);
export type Canary = Static<typeof Canary>;

export const ProxyHandler = Type.Object(
  { type: Type.Literal('proxy'), upstream: Type.String({ minLength: 1 }), canary: Type.Optional(Canary) },
  { additionalProperties: false },
);
export type ProxyHandler = Static<typeof ProxyHandler>;

export const manifest = handlerManifest({
  kind: 'proxy',
  schema: ProxyHandler,
  upstreams: (h) => [
    { field: 'upstream', id: h.upstream },
    ...(h.canary ? [{ field: 'canary.upstream', id: h.canary.upstream }] : []),
  ],
});
