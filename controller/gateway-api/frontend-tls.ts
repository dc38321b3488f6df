/**
 * A Gateway's spec.tls.frontend (client certificate validation, GEP-91) for one HTTPS listener:
 * the perPort entry of the listener's port, else the default. Its caCertificateRefs name
 * ConfigMaps (core: key ca.crt) or Secrets (key ca.crt, as cert-manager writes CA bundles),
 * cross-namespace only with a ReferenceGrant. A ref that does not resolve sets the listener's
 * ResolvedRefs False (InvalidCACertificateRef: missing, no ca.crt, no usable PEM certificate;
 * InvalidCACertificateKind: another kind; RefNotPermitted); when none resolves, Accepted is
 * False too (NoValidCACertificate). A listener with any such problem is not served (fail
 * closed: never with fewer CAs than asked). HTTP listeners take none of it. Pure.
 */
import { usableBundle } from '../../dataplane/config/pem.ts';
import type { ClientValidation } from '../../dataplane/config/route-table.ts';
import {
  GATEWAY_API_GROUP,
  type FrontendTls,
  type Gateway,
  type GatewayListener,
} from '../api/gateway-api.ts';
import type { ResourceSet } from '../source/resource-set.ts';
import { keyOf } from '../source/resource-set.ts';
import { secretValue } from '../validate/secret-refs.ts';
import { referencePermitted } from './reference-grants.ts';

export const CA_KEY = 'ca.crt';

export interface FrontendProblem {
  type: 'ResolvedRefs' | 'Accepted';
  reason: string;
  message: string;
}

/** The validation that applies to a listener's port, and the field it is at (for messages). */
export function frontendValidationFor(
  g: Gateway,
  port: number,
): { at: string; validation: NonNullable<FrontendTls['validation']> } | undefined {
  const frontend = g.spec.tls?.frontend;
  const i = frontend?.perPort?.findIndex((p) => p.port === port) ?? -1;
  if (i >= 0) {
    const v = frontend!.perPort![i].tls.validation;
    return v && { at: `spec.tls.frontend.perPort[${i}].tls.validation`, validation: v };
  }
  const v = frontend?.default?.validation;
  return v && { at: 'spec.tls.frontend.default.validation', validation: v };
}

/** "namespace/name" of the ConfigMaps and Secrets the Gateways' frontend validation names. */
export function frontendCaRefs(gateways: Iterable<Gateway>): {
  configMaps: Set<string>;
  secrets: Set<string>;
} {
  const configMaps = new Set<string>();
  const secrets = new Set<string>();
  for (const g of gateways) {
    const ns = g.metadata.namespace ?? 'default';
    const frontend = g.spec?.tls?.frontend;
    for (const v of [frontend?.default, ...(frontend?.perPort?.map((p) => p.tls) ?? [])])
      for (const ref of v?.validation?.caCertificateRefs ?? []) {
        if ((ref.group ?? '') !== '') continue;
        const key = `${ref.namespace ?? ns}/${ref.name}`;
        if (ref.kind === 'ConfigMap') configMaps.add(key);
        else if (ref.kind === 'Secret') secrets.add(key);
      }
  }
  return { configMaps, secrets };
}

/** An HTTPS listener's client validation for the table, or the problems that keep it from being served. */
export function resolveFrontendValidation(
  set: ResourceSet,
  g: Gateway,
  l: GatewayListener,
): { validation?: ClientValidation; problems: FrontendProblem[] } {
  const found = frontendValidationFor(g, l.port);
  if (l.protocol !== 'HTTPS' || found === undefined) return { problems: [] };
  const { at, validation } = found;
  const ns = g.metadata.namespace!;
  const problems: FrontendProblem[] = [];
  const bundles: string[] = [];
  (validation.caCertificateRefs ?? []).forEach((ref, i) => {
    const field = `${at}.caCertificateRefs[${i}]`;
    const refNs = ref.namespace ?? ns;
    const name = `${refNs}/${ref.name}`;
    const kind = ref.kind ?? '';
    if ((ref.group ?? '') !== '' || (kind !== 'ConfigMap' && kind !== 'Secret')) {
      problems.push({
        type: 'ResolvedRefs',
        reason: 'InvalidCACertificateKind',
        message: `${field}: ${ref.group ? `${ref.group}/` : ''}${kind} is not a ConfigMap or a Secret`,
      });
      return;
    }
    const permitted = referencePermitted(
      set.referenceGrants,
      { group: GATEWAY_API_GROUP, kind: 'Gateway', namespace: ns },
      { group: '', kind, namespace: refNs, name: ref.name },
    );
    if (!permitted) {
      problems.push({
        type: 'ResolvedRefs',
        reason: 'RefNotPermitted',
        message: `${field}: ${kind} ${name} is in another namespace and no ReferenceGrant there allows it`,
      });
      return;
    }
    const pem = caBundle(set, kind, refNs, ref.name);
    const problem =
      typeof pem !== 'string'
        ? pem.problem
        : usableBundle(pem)
          ? null
          : `${kind} ${name}: ${CA_KEY} holds no PEM certificate, or one that does not parse`;
    if (problem !== null) {
      problems.push({
        type: 'ResolvedRefs',
        reason: 'InvalidCACertificateRef',
        message: `${field}: ${problem}`,
      });
      return;
    }
    bundles.push((pem as string).trim());
  });
  if (bundles.length === 0)
    problems.push({
      type: 'Accepted',
      reason: 'NoValidCACertificate',
      message: `${at}: none of caCertificateRefs is a usable CA bundle`,
    });
  if (problems.length > 0) return { problems };
  return {
    validation: { caBundle: `${bundles.join('\n')}\n`, mode: validation.mode ?? 'AllowValidOnly' },
    problems,
  };
}

/** The PEM text of a ConfigMap's or Secret's ca.crt, or why there is none. */
function caBundle(set: ResourceSet, kind: string, ns: string, name: string): string | { problem: string } {
  const full = `${ns}/${name}`;
  if (kind === 'ConfigMap') {
    const cm = set.configMaps.get(keyOf(ns, name));
    if (cm === undefined) return { problem: `ConfigMap ${full} not found` };
    const pem = cm.data?.[CA_KEY];
    return pem ?? { problem: `ConfigMap ${full} has no key ${JSON.stringify(CA_KEY)}` };
  }
  const value = secretValue(set.secrets.get(keyOf(ns, name)), CA_KEY);
  return typeof value === 'string' ? { problem: value.replace('%s', full) } : value.toString('utf8');
}
