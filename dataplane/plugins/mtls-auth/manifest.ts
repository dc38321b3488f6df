/**
 * mtls-auth config: a client certificate verified against a CA bundle (and CRLs) from Secrets,
 * the caller named by one of its fields. In a GatewayPlugin the bundle and each CRL are
 * secretKeyRefs; the controller copies their values into `value` (base64) for the data plane.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { ConfigProblem } from '../../config/config-problem.ts';
import { HEADER_NAME_PATTERN } from '../../config/http-grammar.ts';
import { pluginManifest } from '../../config/manifest.ts';
import { SecretValueSchema } from '../../config/secret-ref.ts';
import { parseCrl } from '../../config/crl.ts';
import { readBundle } from '../../config/pem.ts';
import { secretValueProblem } from '../../config/secret-value-check.ts';

const FromSecret = SecretValueSchema;

export const IDENTITIES = ['subjectCN', 'sanURI', 'sanDNS', 'sanEmail', 'sha256'] as const;

export const MtlsAuthConfig = Type.Object(
  {
    caBundle: FromSecret('PEM certificates the client chain must end at (roots or intermediates).'),
    crls: Type.Optional(
      Type.Array(FromSecret('A CRL (PEM or DER) of one of those CAs.'), {
        maxItems: 32,
        description:
          'Revocation lists; a CRL counts for the CA whose key signed it, and one past its nextUpdate refuses that CA’s clients.',
      }),
    ),
    identity: Type.Optional(
      Type.Union(
        IDENTITIES.map((i) => Type.Literal(i)),
        {
          description:
            'The certificate field that names the caller: subject CN (default), the first SAN URI, DNS name or ' +
            'email, or the SHA-256 fingerprint (hex, lower-case).',
        },
      ),
    ),
    consumers: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: Type.String({
              minLength: 1,
              maxLength: 253,
              description: 'The consumer: rate limits and idempotency keys are scoped to it.',
            }),
            values: Type.Array(
              Type.String({ minLength: 1, maxLength: 1024, description: 'An identity value.' }),
              {
                minItems: 1,
                maxItems: 64,
                description: 'Identity values (per `identity`) that are this consumer.',
              },
            ),
          },
          {
            additionalProperties: false,
            description: 'One consumer and the certificate identities that are it.',
          },
        ),
        {
          maxItems: 10_000,
          description:
            'Who is allowed: a verified certificate whose identity no consumer lists is refused with 403. ' +
            'Without it every verified certificate passes, its identity value the consumer.',
        },
      ),
    ),
    forwardClientCert: Type.Optional(
      Type.Object(
        {
          header: Type.Optional(
            Type.String({
              pattern: HEADER_NAME_PATTERN,
              maxLength: 128,
              description: 'Default X-Forwarded-Client-Cert.',
            }),
          ),
        },
        {
          additionalProperties: false,
          description:
            'Send the verified certificate upstream in Envoy’s X-Forwarded-Client-Cert format (Hash, Subject, URI, DNS). ' +
            'A client’s own X-Forwarded-Client-Cert is always removed at ingress.',
        },
      ),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Client certificates (mTLS) verified against a CA bundle; the caller is a certificate field.',
  },
);
export type MtlsAuthConfig = Static<typeof MtlsAuthConfig>;

const NO_CERTIFICATE = 'holds no PEM certificate';

function checkMtlsAuth(c: MtlsAuthConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  // The Secrets' values, once resolved (the controller after resolution, the data plane's door):
  // what the plugin reads when it is built, read here first so a bad one is refused by name.
  const unreadable = (field: string, problem: string | null) => {
    if (problem !== null) problems.push({ field, message: `the Secret's value cannot be read: ${problem}` });
  };
  if (c.caBundle.value !== undefined)
    unreadable(
      'caBundle',
      secretValueProblem('CA bundle', c.caBundle.value, (bytes) => {
        if (readBundle(bytes.toString('utf8')).length === 0) throw new Error(NO_CERTIFICATE);
      }),
    );
  c.crls?.forEach((crl, i) => {
    if (crl.value !== undefined) unreadable(`crls[${i}]`, secretValueProblem('CRL', crl.value, parseCrl));
  });
  const seen = new Map<string, string>();
  const consumers = c.consumers ?? [];
  for (let i = 0; i < consumers.length; i++)
    for (let j = 0; j < consumers[i].values.length; j++) {
      const v = consumers[i].values[j];
      const other = seen.get(v);
      if (other !== undefined && other !== consumers[i].name)
        problems.push({ field: `consumers[${i}].values[${j}]`, message: `is also consumer ${other}` });
      seen.set(v, consumers[i].name);
    }
  return problems;
}

export const manifest = pluginManifest({
  name: 'mtls-auth',
  phase: 'authenticate',
  schema: MtlsAuthConfig,
  checks: checkMtlsAuth,
  secrets: 'value',
  needs: { clientCertificate: true },
});
