/**
 * Service parameters → the Service settings of Gateways. Pure. Two places name them: a
 * GatewayClass's spec.parametersRef (for all its Gateways) and a Gateway's own
 * spec.infrastructure.parametersRef (GEP-1867: for that Gateway; merged over its class's).
 *
 * The parameters are a ConfigMap (group "", kind ConfigMap) in a namespace the controller
 * watches: a class's names its namespace (required, the class being cluster-scoped); a Gateway's
 * is a local reference, in the Gateway's own namespace. Its keys, all optional:
 *   serviceType         ClusterIP | NodePort | LoadBalancer (absent: the controller's default,
 *                       --gateway-service-type);
 *   serviceLabels       a YAML (or JSON) map of label keys to label values,
 *   serviceAnnotations  and of annotation keys to strings: added to each Gateway's Service
 *                       (a Gateway's own spec.infrastructure labels and annotations win on the
 *                       same key; the gateway-name label always does);
 *   externalTrafficPolicy  Cluster | Local, for NodePort and LoadBalancer Services (absent:
 *                       Cluster; with serviceType ClusterIP it is refused).
 * Anything else (another kind, no namespace, a ConfigMap that does not exist, an unknown key, a
 * value that does not parse) is a reason for Accepted False InvalidParameters, as the spec says,
 * on the class (its Gateways are then not served) or on the Gateway (only it is not served), and
 * the message names it.
 */
import { parse } from 'yaml';
import {
  GATEWAY_SERVICE_TYPES,
  type Gateway,
  type GatewayClass,
  type GatewayServiceType,
} from '../api/gateway-api.ts';
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

export type ParametersResult = { parameters: ClassParameters } | { problem: string };

/** The class's parameters (none named: {}), or why they cannot be used. */
export function classParameters(set: ResourceSet, gc: GatewayClass): ParametersResult {
  const ref = gc.spec.parametersRef;
  if (ref === undefined) return { parameters: {} };
  return configMapParameters(set, ref, ref.namespace, 'spec.parametersRef');
}

/** "namespace/name" of the ConfigMap a Gateway's spec.infrastructure.parametersRef names, if it names one. */
export function gatewayParametersConfigMap(g: Gateway): string | undefined {
  const ref = g.spec.infrastructure?.parametersRef;
  if (ref === undefined || ref.group !== '' || ref.kind !== 'ConfigMap') return undefined;
  return keyOf(g.metadata.namespace!, ref.name);
}

/**
 * A Gateway's Service parameters: its class's, with its own spec.infrastructure.parametersRef
 * (a ConfigMap in its namespace) merged over them key by key (labels and annotations map by map),
 * or why its own cannot be used. A class's externalTrafficPolicy does not follow a Gateway that
 * makes its Service ClusterIP (it has none); the Gateway's own with ClusterIP is refused.
 */
export function gatewayParameters(set: ResourceSet, g: Gateway, cls: ClassParameters): ParametersResult {
  const ref = g.spec.infrastructure?.parametersRef;
  if (ref === undefined) return { parameters: cls };
  const own = configMapParameters(set, ref, g.metadata.namespace, 'spec.infrastructure.parametersRef');
  if ('problem' in own) return own;
  const p = own.parameters;
  const serviceType = p.serviceType ?? cls.serviceType;
  if (serviceType === 'ClusterIP' && p.externalTrafficPolicy !== undefined)
    return {
      problem: `spec.infrastructure.parametersRef: ConfigMap ${g.metadata.namespace}/${ref.name} key externalTrafficPolicy: a ClusterIP Service (the class's serviceType) has none`,
    };
  const externalTrafficPolicy =
    serviceType === 'ClusterIP' ? undefined : (p.externalTrafficPolicy ?? cls.externalTrafficPolicy);
  const serviceLabels = merged(cls.serviceLabels, p.serviceLabels);
  const serviceAnnotations = merged(cls.serviceAnnotations, p.serviceAnnotations);
  return {
    parameters: {
      ...(serviceType && { serviceType }),
      ...(serviceLabels && { serviceLabels }),
      ...(serviceAnnotations && { serviceAnnotations }),
      ...(externalTrafficPolicy && { externalTrafficPolicy }),
    },
  };
}

function merged(
  a: Record<string, string> | undefined,
  b: Record<string, string> | undefined,
): Record<string, string> | undefined {
  return a === undefined && b === undefined ? undefined : { ...a, ...b };
}

/** The parameters in the ConfigMap `ref` names (`at`: the referring field), or why they cannot be used. */
function configMapParameters(
  set: ResourceSet,
  ref: { group: string; kind: string; name: string },
  namespace: string | undefined,
  at: string,
): ParametersResult {
  if (ref.group !== '' || ref.kind !== 'ConfigMap')
    return {
      problem: `${at}: ${ref.group ? `${ref.group}/` : ''}${ref.kind} ${ref.name} is not a kind of parameters Sluice reads (a ConfigMap is: group "", kind ConfigMap)`,
    };
  if (!namespace) return { problem: `${at}.namespace: a ConfigMap's namespace is required` };
  const name = `${namespace}/${ref.name}`;
  const cm = set.configMaps.get(keyOf(namespace, ref.name));
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
