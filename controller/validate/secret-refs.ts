/**
 * ResolvedRefs for credentials: every secretKeyRef in a GatewayPlugin's config must name a key
 * of a Secret in the plugin's namespace. Next to each reference the compiled config gets the
 * SHA-256 of the value (`sha256`: data planes check presented credentials by hash and never
 * hold them) or, for keys that must verify (jwt), the value (`value`, base64). Either way the
 * snapshot's hash changes when a Secret's value does. A resolved field written by hand is
 * refused: it would bypass the Secret.
 */
import { createHash } from 'node:crypto';
import type { Secret } from '../api/index.ts';
import { keyOf, type ObjectRef } from '../source/resource-set.ts';
import { type Diagnostic, invalid } from './diagnostic.ts';

export function resolveSecretRefs(
  ref: ObjectRef,
  config: Record<string, unknown>,
  secrets: ReadonlyMap<string, Secret>,
  as: 'sha256' | 'value' = 'sha256',
  /** Where the config is in the object, for messages (e.g. "spec.keyAuth"). */
  at = 'spec.config',
): Diagnostic[] {
  const diagnostics: Diagnostic[] = [];
  const walk = (v: unknown, at: string): void => {
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) walk(v[i], `${at}[${i}]`);
    } else if (v !== null && typeof v === 'object') {
      const obj = v as Record<string, unknown>;
      const sref = obj.secretKeyRef as { name?: unknown; key?: unknown } | undefined;
      if (sref && typeof sref.name === 'string' && typeof sref.key === 'string') {
        if ('sha256' in obj)
          diagnostics.push(invalid(ref, `${at}.sha256`, 'is set by the controller from the Secret'));
        const value = secretValue(secrets.get(keyOf(ref.namespace, sref.name)), sref.key);
        if (typeof value === 'string')
          diagnostics.push({
            object: ref,
            field: `${at}.secretKeyRef`,
            condition: 'ResolvedRefs',
            reason: 'SecretNotFound',
            message: value.replace('%s', `${ref.namespace}/${sref.name}`),
          });
        else
          obj[as] =
            as === 'sha256' ? createHash('sha256').update(value).digest('hex') : value.toString('base64');
      }
      for (const [k, x] of Object.entries(obj)) if (k !== 'secretKeyRef') walk(x, `${at}.${k}`);
    }
  };
  walk(config, at);
  return diagnostics;
}

/** The bytes of one key of a Secret, or why not ("%s" stands for the Secret's name). */
export function secretValue(secret: Secret | undefined, key: string): Buffer | string {
  if (secret === undefined) return 'Secret %s not found';
  if (secret.stringData?.[key] !== undefined) return Buffer.from(secret.stringData[key], 'utf8');
  if (secret.data?.[key] !== undefined) return Buffer.from(secret.data[key], 'base64');
  return `Secret %s has no key ${JSON.stringify(key)}`;
}
