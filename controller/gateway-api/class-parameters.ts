/**
 * A GatewayClass's spec.parametersRef → the Service settings of its Gateways. Pure.
 *
 * The parameters are a ConfigMap (group "", kind ConfigMap; namespace required, the class being
 * cluster-scoped) in a namespace the controller watches. Its keys, all optional:
 *   serviceType         ClusterIP | NodePort | LoadBalancer (absent: the controller's default,
 *                       --gateway-service-type);
 *   serviceLabels       a YAML (or JSON) map of label keys to label values,
 *   serviceAnnotations  and of annotation keys to strings: added to each Gateway's Service
 *                       (a Gateway's own spec.infrastructure labels and annotations win on the
 *                       same key; the gateway-name label always does);
 *   externalTrafficPolicy  Cluster | Local, for NodePort and LoadBalancer Services (absent:
 *                       Cluster; with serviceType ClusterIP it is refused).
 * Anything else (another kind, no namespace, a ConfigMap that does not exist, an unknown key, a
 * value that does not parse) is a reason for the class's Accepted False InvalidParameters, as
 * the spec says, and the message names it: the class's Gateways are then not served.
 */
import { parse } from 'yaml';
import { GATEWAY_SERVICE_TYPES, type GatewayClass, type GatewayServiceType } from '../api/gateway-api.ts';
import type { ResourceSet } from '../source/resource-set.ts';
import { keyOf } from '../source/resource-set.ts';

/** What a class's parameters set on its Gateways' Services. */
export interface ClassParameters {
  serviceType?: GatewayServiceType;
  serviceLabels?: Record<string, string>;
  serviceAnnotations?: Record<string, string>;
  externalTrafficPolicy?: ExternalTrafficPolicy;
}

export type ExternalTrafficPolicy = 'Cluster' | 'Local';
const TRAFFIC_POLICIES: readonly ExternalTrafficPolicy[] = ['Cluster', 'Local'];
const KEYS = ['externalTrafficPolicy', 'serviceAnnotations', 'serviceLabels', 'serviceType'] as const;

/** A label (or annotation) key: an optional DNS-subdomain prefix and "/", then a name of 63 at most. */
export const LABEL_KEY =
  /^(?:[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
/** A label value: empty, or 63 letters, digits, - _ . at most, alphanumeric at both ends. */
export const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/** "namespace/name" of the ConfigMap a class's parametersRef names, if it names one. */
export function parametersConfigMap(gc: GatewayClass): string | undefined {
  const ref = gc.spec.parametersRef;
  if (ref === undefined || ref.group !== '' || ref.kind !== 'ConfigMap' || !ref.namespace) return undefined;
  return keyOf(ref.namespace, ref.name);
}

/** The class's parameters (none named: {}), or why they cannot be used. */
export function classParameters(
  set: ResourceSet,
  gc: GatewayClass,
): { parameters: ClassParameters } | { problem: string } {
  const ref = gc.spec.parametersRef;
  if (ref === undefined) return { parameters: {} };
  const at = 'spec.parametersRef';
  if (ref.group !== '' || ref.kind !== 'ConfigMap')
    return {
      problem: `${at}: ${ref.group ? `${ref.group}/` : ''}${ref.kind} ${ref.name} is not a kind of parameters Sluice reads (a ConfigMap is: group "", kind ConfigMap)`,
    };
  if (!ref.namespace) return { problem: `${at}.namespace: a ConfigMap's namespace is required` };
  const name = `${ref.namespace}/${ref.name}`;
  const cm = set.configMaps.get(keyOf(ref.namespace, ref.name));
  if (cm === undefined)
    return {
      problem: `${at}: ConfigMap ${name} not found (it must be in a namespace the controller watches)`,
    };
  const data = cm.data ?? {};
  const problems: string[] = [];
  const parameters: ClassParameters = {};
  for (const key of Object.keys(data).sort()) {
    const value = data[key];
    const field = `ConfigMap ${name} key ${key}`;
    if (!(KEYS as readonly string[]).includes(key)) {
      problems.push(`${field} is not a parameter Sluice reads (${KEYS.join(', ')} are)`);
      continue;
    }
    if (key === 'serviceType') {
      const type = value.trim();
      if ((GATEWAY_SERVICE_TYPES as readonly string[]).includes(type))
        parameters.serviceType = type as GatewayServiceType;
      else problems.push(`${field}: ${JSON.stringify(type)} is not ${GATEWAY_SERVICE_TYPES.join(', ')}`);
      continue;
    }
    if (key === 'externalTrafficPolicy') {
      const policy = value.trim();
      if ((TRAFFIC_POLICIES as readonly string[]).includes(policy))
        parameters.externalTrafficPolicy = policy as ExternalTrafficPolicy;
      else problems.push(`${field}: ${JSON.stringify(policy)} is not ${TRAFFIC_POLICIES.join(', ')}`);
      continue;
    }
    const map = stringMap(value, key === 'serviceLabels');
    if (typeof map === 'string') problems.push(`${field}: ${map}`);
    else if (key === 'serviceLabels') parameters.serviceLabels = map;
    else parameters.serviceAnnotations = map;
  }
  if (parameters.externalTrafficPolicy !== undefined && parameters.serviceType === 'ClusterIP')
    problems.push(
      `ConfigMap ${name} key externalTrafficPolicy: a ClusterIP Service has none (serviceType NodePort or LoadBalancer takes it)`,
    );
  return problems.length ? { problem: problems.join('; ') } : { parameters };
}

/** A YAML/JSON map of keys to strings (label values when `labels`), or what is wrong with it. */
function stringMap(text: string, labels: boolean): Record<string, string> | string {
  let parsed: unknown;
  try {
    parsed = parse(text);
  } catch (err) {
    return `not YAML (${(err as Error).message.split('\n')[0]})`;
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) return 'must be a map of keys to strings';
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parsed)) {
    if (!LABEL_KEY.test(k)) return `${JSON.stringify(k)} is not a ${labels ? 'label' : 'annotation'} key`;
    if (typeof v !== 'string') return `the value of ${k} must be a string (quote it)`;
    if (labels && !LABEL_VALUE.test(v))
      return `the value of ${k}, ${JSON.stringify(v)}, is not a label value`;
    out[k] = v;
  }
  return out;
}
