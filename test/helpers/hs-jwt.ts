/**
 * A jwt GatewayPlugin named "jwt" verifying HS256 tokens of issuer "test-issuer" with a shared
 * secret held in the Secret "jwt-key", and tokens it accepts: for tests that put jwt in front
 * of a route compiled by the real controller.
 */
import { SignJWT } from 'jose';

export const HS_SECRET = 'a-shared-secret-of-32-bytes-or-more!!';
const ISSUER = 'test-issuer';

/** The Secret and the GatewayPlugin, in `namespace`, accepting tokens for `audience`. */
export function hsJwtResources(namespace: string, audience: string): unknown[] {
  return [
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'jwt-key', namespace },
      stringData: { k: HS_SECRET },
    },
    {
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'GatewayPlugin',
      metadata: { name: 'jwt', namespace, generation: 1 },
      spec: {
        plugin: 'jwt',
        jwt: {
          issuers: [
            {
              issuer: ISSUER,
              audiences: [audience],
              algorithms: ['HS256'],
              keys: [{ secretKeyRef: { name: 'jwt-key', key: 'k' } }],
            },
          ],
        },
      },
    },
  ];
}

/** A token the plugin accepts: subject `sub`, valid 5 minutes. */
export function hsJwt(audience: string, sub = 'alice'): Promise<string> {
  return new SignJWT({ sub })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(ISSUER)
    .setAudience(audience)
    .setExpirationTime('5m')
    .sign(new TextEncoder().encode(HS_SECRET));
}
