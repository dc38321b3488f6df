/**
 * The upstream Gateway API CRDs (standard channel, ../shared/gateway-api/standard) in the API
 * server KUBECONFIG names. Only the CustomResourceDefinitions: the folder also holds a
 * ValidatingAdmissionPolicy and its binding, which kapi does not serve (see the folder's README).
 *
 * ../shared belongs to this machine, not to the project (users install the CRDs from the
 * upstream release): the project never copies them, tests read them from there.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ok } from '../kubectl.ts';
import { waitFor } from '../until.ts';

const ROOT = resolve(import.meta.dirname, '../../..');
export const GATEWAY_API_DIR = resolve(ROOT, '..', 'shared', 'gateway-api');
const STANDARD = join(GATEWAY_API_DIR, 'standard');

/** Why the upstream Gateway API files cannot be read here (null: they can). */
export const gatewayApiMissing: string | null = existsSync(STANDARD)
  ? null
  : `${STANDARD} not found (a checkout of the project beside ../shared/gateway-api is needed)`;

export interface CrdFile {
  file: string;
  /** metadata.name of the CRD, e.g. httproutes.gateway.networking.k8s.io. */
  name: string;
  /** Its gateway.networking.k8s.io/bundle-version annotation (v1.6.1). */
  bundleVersion: string;
}

/** The CRD files of the standard channel, one CRD each. */
export function standardCrdFiles(): CrdFile[] {
  if (gatewayApiMissing !== null) throw new Error(gatewayApiMissing);
  const out: CrdFile[] = [];
  for (const f of readdirSync(STANDARD).sort()) {
    if (!f.endsWith('.yaml')) continue;
    const file = join(STANDARD, f);
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
      const o = doc.toJS() as {
        kind?: string;
        metadata?: { name?: string; annotations?: Record<string, string> };
      } | null;
      if (o?.kind !== 'CustomResourceDefinition') continue;
      out.push({
        file,
        name: String(o.metadata?.name),
        bundleVersion: o.metadata?.annotations?.['gateway.networking.k8s.io/bundle-version'] ?? '',
      });
    }
  }
  return out;
}

export interface CrdState {
  name: string;
  bundleVersion: string;
  established: boolean;
  resourceVersion: string;
}

// Only the fields needed: the CRDs themselves are megabytes (more than kubectl's output buffer).
const STATE_PATH =
  '{range .items[*]}{.metadata.name}{"\\t"}' +
  '{.metadata.annotations.gateway\\.networking\\.k8s\\.io/bundle-version}{"\\t"}' +
  '{.status.conditions[?(@.type=="Established")].status}{"\\t"}{.metadata.resourceVersion}{"\\n"}{end}';

/** The CRDs of these names that exist, with their bundle version and whether they are Established. */
export async function crdStates(names: readonly string[]): Promise<CrdState[]> {
  // Two names at least, so kubectl answers a List even when one is asked for.
  const asked = names.length === 1 ? [names[0], names[0]] : names;
  const out = await ok(['get', 'crd', ...asked, '--ignore-not-found', '-o', `jsonpath=${STATE_PATH}`]);
  const seen = new Map<string, CrdState>();
  for (const line of out.split('\n').filter(Boolean)) {
    const [name, bundleVersion, established, resourceVersion] = line.split('\t');
    seen.set(name, { name, bundleVersion, established: established === 'True', resourceVersion });
  }
  return [...seen.values()];
}

/** The CRDs already there, of the same bundle version and Established. */
async function installed(crds: CrdFile[]): Promise<Set<string>> {
  const want = new Map(crds.map((c) => [c.name, c.bundleVersion]));
  return new Set(
    (await crdStates(crds.map((c) => c.name)))
      .filter((s) => s.established && s.bundleVersion === want.get(s.name))
      .map((s) => s.name),
  );
}

/**
 * Installs the standard CRDs (server-side apply: the HTTPRoute CRD is too big for a client-side
 * apply's annotation on the experimental channel, and server-side is what clusters use) and waits
 * until each is Established. Idempotent: when every one is already there at this bundle version
 * and Established, it only reads them (one kubectl call). Returns the CRD names.
 */
export async function installGatewayApiCrds(): Promise<string[]> {
  const crds = standardCrdFiles();
  const names = crds.map((c) => c.name);
  if ((await installed(crds)).size === crds.length) return names;
  const files = [...new Set(crds.map((c) => c.file))];
  await ok([
    'apply',
    '--server-side',
    '--force-conflicts',
    '--field-manager=gateway-api-test-crds',
    ...files.flatMap((f) => ['-f', f]),
  ]);
  // Polled with `get`, not `kubectl wait`: wait watches from the resourceVersion it listed, and
  // with kapi compacting every 3 s on a loaded machine that watch can expire (CI failed so once).
  await waitFor(
    'the Gateway API CRDs are Established',
    () => installed(crds),
    (done) => done.size === crds.length,
    60_000,
    250,
  );
  return names;
}
