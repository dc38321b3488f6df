/** proxy: the route's request goes to one upstream and its response streams back. */
import { type Static, Type } from '@sinclair/typebox';
import { handlerManifest } from '../../config/manifest.ts';

export const ProxyHandler = Type.Object(
  { type: Type.Literal('proxy'), upstream: Type.String({ minLength: 1 }) },
  { additionalProperties: false },
);
export type ProxyHandler = Static<typeof ProxyHandler>;

export const manifest = handlerManifest({
  kind: 'proxy',
  schema: ProxyHandler,
  upstreams: (h) => [{ field: 'upstream', id: h.upstream }],
  load: (): Promise<{ default: unknown }> => import('./index.ts'),
});
