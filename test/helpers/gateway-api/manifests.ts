/**
 * The upstream conformance manifests (../shared/gateway-api/conformance, read there, never
 * copied) as objects with the placeholders filled, applied to and deleted from the API server
 * KUBECONFIG names, as upstream's applier does for each test: `tests/<file>.yaml` holds the
 * objects of one conformance test (httproute-simple-same-namespace.yaml for
 * HTTPRouteSimpleSameNamespace).
 *
 * Deployments, Pods and ReplicaSets are not applied: kapi runs no pods, the echo processes of
 * backends.ts stand in for them (and write the EndpointSlices a cluster's controller would).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { ok } from '../kubectl.ts';
import type { Backends, Started } from './backends.ts';
import { GATEWAY_API_DIR } from './crds.ts';

export const CONFORMANCE_DIR = join(GATEWAY_API_DIR, 'conformance');

/** What the suite's manifests leave open: `{GATEWAY_CLASS_NAME}` and `{GATEWAY_CONTROLLER_NAME}`. */
export interface Placeholders {
  gatewayClassName: string;
  controllerName: string;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: Record<string, unknown>;
  [field: string]: unknown;
}

/** Kinds that only a cluster's controllers turn into running pods: backends.ts runs them instead. */
export const RUN_IN_PROCESS = new Set(['Deployment', 'Pod', 'ReplicaSet']);

const FIELD_MANAGER = 'gateway-api-conformance';

export function fillPlaceholders(text: string, p: Placeholders): string {
  return text
    .replaceAll('{GATEWAY_CLASS_NAME}', p.gatewayClassName)
    .replaceAll('{GATEWAY_CONTROLLER_NAME}', p.controllerName);
}

/** The objects of a multi-document YAML text; `source` names it in errors. */
export function parseObjects(text: string, source: string): KubeObject[] {
  const out: KubeObject[] = [];
  parseAllDocuments(text).forEach((doc, i) => {
    if (doc.errors.length > 0) throw new Error(`${source}, document ${i + 1}: ${doc.errors[0].message}`);
    const o = doc.toJS() as Partial<KubeObject> | null;
    if (o === null) return; // an empty document (a trailing ---)
    if (!o.kind || !o.apiVersion || !o.metadata?.name)
      throw new Error(`${source}, document ${i + 1}: an object needs apiVersion, kind and metadata.name`);
    out.push(o as KubeObject);
  });
  return out;
}

/** A file under conformance/ (`base/manifests.yaml`, `tests/<name>.yaml`), placeholders filled. */
export function readConformance(relative: string, p: Placeholders): KubeObject[] {
  const file = join(CONFORMANCE_DIR, relative);
  if (!existsSync(file)) throw new Error(`${file} not found`);
  return parseObjects(fillPlaceholders(readFileSync(file, 'utf8'), p), relative);
}

/** The objects of conformance test file tests/<name>.yaml (name without .yaml). */
export function testObjects(name: string, p: Placeholders): KubeObject[] {
  const file = join(CONFORMANCE_DIR, 'tests', `${name}.yaml`);
  if (!existsSync(file)) {
    const near = readdirSync(join(CONFORMANCE_DIR, 'tests'))
      .filter((f) => f.startsWith(name.split('-').slice(0, 2).join('-')))
      .map((f) => f.replace(/\.yaml$/, ''));
    throw new Error(
      `no conformance test file tests/${name}.yaml in ${CONFORMANCE_DIR}` +
        (near.length ? ` (files with that start: ${near.join(', ')})` : ''),
    );
  }
  return readConformance(`tests/${name}.yaml`, p);
}

export const toYaml = (objects: readonly KubeObject[]): string =>
  objects.map((o) => stringify(o)).join('---\n');

export const describeObject = (o: KubeObject): string =>
  `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;

/**
 * A Namespace with the label kube-apiserver gives every namespace (kubernetes.io/metadata.name:
 * its name, since Kubernetes 1.22), which kapi does not add: the suite's allowedRoutes selectors
 * select namespaces by it.
 */
export function withNameLabel(o: KubeObject): KubeObject {
  if (o.kind !== 'Namespace') return o;
  const labels = { ...o.metadata.labels, 'kubernetes.io/metadata.name': o.metadata.name };
  return { ...o, metadata: { ...o.metadata, labels } };
}

/** Server-side apply, in the order given (Namespaces first where a file puts them first). */
export async function applyObjects(objects: readonly KubeObject[]): Promise<void> {
  if (objects.length === 0) return;
  await ok(
    ['apply', '--server-side', '--force-conflicts', `--field-manager=${FIELD_MANAGER}`, '-f', '-'],
    toYaml(objects.map(withNameLabel)),
  );
}

/**
 * Deletes the objects (last first) and waits until they are gone. Namespaces are left: kapi
 * never finishes deleting one (no namespace controller), and one stuck Terminating would refuse
 * the next test's objects.
 */
export async function deleteObjects(objects: readonly KubeObject[]): Promise<void> {
  const gone = objects.filter((o) => o.kind !== 'Namespace').reverse();
  if (gone.length === 0) return;
  const stubs = gone.map((o) => ({ apiVersion: o.apiVersion, kind: o.kind, metadata: o.metadata }));
  await ok(['delete', '--ignore-not-found', '--wait', '--timeout=60s', '-f', '-'], toYaml(stubs));
}

export interface AppliedTest {
  /** The file's objects, placeholders filled (Deployments included: `backends` runs them). */
  objects: KubeObject[];
  /** Deletes what was applied, stops the file's pods and their EndpointSlices. */
  delete(): Promise<void>;
}

/**
 * Applies conformance test file tests/<name>.yaml. With `backends`, its Deployments run as echo
 * processes and its Services with selectors get EndpointSlices (as a cluster would give them);
 * without, they are only stored (Services) or left out (Deployments).
 */
export async function applyConformanceTest(
  name: string,
  p: Placeholders,
  backends?: Backends,
): Promise<AppliedTest> {
  const objects = testObjects(name, p);
  const stored = objects.filter((o) => !RUN_IN_PROCESS.has(o.kind));
  await applyObjects(stored);
  let started: Started | undefined;
  if (backends) started = await backends.add(objects);
  return {
    objects,
    async delete() {
      if (started) await backends?.remove(started);
      await deleteObjects(stored);
    },
  };
}

/** A GatewayClass of `controllerName` (cluster-scoped), as an implementation's user installs one. */
export async function applyGatewayClass(p: Placeholders): Promise<void> {
  await applyObjects([
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'GatewayClass',
      metadata: { name: p.gatewayClassName },
      spec: { controllerName: p.controllerName },
    },
  ]);
}
