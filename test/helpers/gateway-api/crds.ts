/**
 * The upstream Gateway API CRDs in the API server KUBECONFIG names, of either channel: the
 * standard one (../shared/gateway-api/standard, what every test but one expects) or the
 * experimental one (../shared/gateway-api/experimental-install.yaml, the same CRDs with the
 * experimental fields, e.g. an HTTPRoute rule's `retry`; its x-k8s.io kinds are left out). Only
 * the CustomResourceDefinitions: the folder also holds a ValidatingAdmissionPolicy and its
 * binding, which kapi does not serve (see the folder's README).
 *
 * Tests run one file at a time on a shared API server, so a file that needs the experimental
 * channel installs it for itself and puts the standard one back after; a later file's
 * installGatewayApiCrds() also puts it back, as it tells the channels apart by each CRD's
 * `gateway.networking.k8s.io/channel` annotation (both carry the same names, versions and
 * bundle version).
 *
 * ../shared belongs to this machine, not to the project (users install the CRDs from the
 * upstream release): the project never copies them, tests read them from there (the
 * experimental CRDs are written to a file in the OS temp folder to be applied).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ok } from '../kubectl.ts';
import { waitFor } from '../until.ts';

const ROOT = resolve(import.meta.dirname, '../../..');
export const GATEWAY_API_DIR = resolve(ROOT, '..', 'shared', 'gateway-api');
const STANDARD = join(GATEWAY_API_DIR, 'standard');
const EXPERIMENTAL = join(GATEWAY_API_DIR, 'experimental-install.yaml');
const CHANNEL = 'gateway.networking.k8s.io/channel';
const BUNDLE_VERSION = 'gateway.networking.k8s.io/bundle-version';

export type Channel = 'standard' | 'experimental';

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
  /** Its gateway.networking.k8s.io/channel annotation. */
  channel: string;
}

interface CrdDoc {
  kind?: string;
  metadata?: { name?: string; annotations?: Record<string, string> };
}

function crdsIn(file: string, text = readFileSync(file, 'utf8')): { crd: CrdFile; yaml: string }[] {
  return parseAllDocuments(text).flatMap((d) => {
    const doc = d.toJS() as CrdDoc | null;
    if (doc?.kind !== 'CustomResourceDefinition') return [];
    const a = doc.metadata?.annotations ?? {};
    const crd = {
      file,
      name: String(doc.metadata?.name),
      bundleVersion: a[BUNDLE_VERSION] ?? '',
      channel: a[CHANNEL] ?? '',
    };
    return [{ crd, yaml: d.toString() }];
  });
}

/** The CRD files of the standard channel, one CRD each. */
export function standardCrdFiles(): CrdFile[] {
  if (gatewayApiMissing !== null) throw new Error(gatewayApiMissing);
  return readdirSync(STANDARD)
    .sort()
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) => crdsIn(join(STANDARD, f)).map((c) => c.crd));
}

let experimental: CrdFile[] | undefined;
/**
 * The experimental channel's CRDs of the standard channel's names (not its x-k8s.io kinds, which
 * the standard channel would not remove), written to one file in the temp folder.
 */
export function experimentalCrdFiles(): CrdFile[] {
  if (experimental) return experimental;
  const names = new Set(standardCrdFiles().map((c) => c.name));
  const all = crdsIn(EXPERIMENTAL).filter((c) => names.has(c.crd.name));
  const file = join(mkdtempSync(join(tmpdir(), 'gateway-api-experimental-')), 'crds.yaml');
  writeFileSync(file, all.map((c) => c.yaml).join('---\n'));
  experimental = all.map((c) => ({ ...c.crd, file }));
  return experimental;
}

export interface CrdState {
  name: string;
  bundleVersion: string;
  channel: string;
  established: boolean;
  resourceVersion: string;
}

// Only the fields needed: the CRDs themselves are megabytes (more than kubectl's output buffer).
const STATE_PATH =
  '{range .items[*]}{.metadata.name}{"\\t"}' +
  '{.metadata.annotations.gateway\\.networking\\.k8s\\.io/bundle-version}{"\\t"}' +
  '{.metadata.annotations.gateway\\.networking\\.k8s\\.io/channel}{"\\t"}' +
  '{.status.conditions[?(@.type=="Established")].status}{"\\t"}{.metadata.resourceVersion}{"\\n"}{end}';

/** The CRDs of these names that exist, with their bundle version and whether they are Established. */
export async function crdStates(names: readonly string[]): Promise<CrdState[]> {
  // Two names at least, so kubectl answers a List even when one is asked for.
  const asked = names.length === 1 ? [names[0], names[0]] : names;
  const out = await ok(['get', 'crd', ...asked, '--ignore-not-found', '-o', `jsonpath=${STATE_PATH}`]);
  const seen = new Map<string, CrdState>();
  for (const line of out.split('\n').filter(Boolean)) {
    const [name, bundleVersion, channel, established, resourceVersion] = line.split('\t');
    seen.set(name, { name, bundleVersion, channel, established: established === 'True', resourceVersion });
  }
  return [...seen.values()];
}

/** The CRDs already there, of the same bundle version and channel, and Established. */
async function installed(crds: CrdFile[]): Promise<Set<string>> {
  const want = new Map(crds.map((c) => [c.name, c]));
  return new Set(
    (await crdStates(crds.map((c) => c.name)))
      .filter((s) => {
        const c = want.get(s.name);
        return s.established && s.bundleVersion === c?.bundleVersion && s.channel === c.channel;
      })
      .map((s) => s.name),
  );
}

/**
 * Installs the CRDs of a channel (default standard; server-side apply: the experimental
 * HTTPRoute CRD is too big for a client-side apply's annotation, and server-side is what clusters
 * use; one field manager, so applying the other channel's removes the fields only this one has)
 * and waits until each is Established. Idempotent: when every one is already there at this
 * bundle version and channel and Established, it only reads them (one kubectl call). Returns the
 * CRD names.
 */
export async function installGatewayApiCrds(channel: Channel = 'standard'): Promise<string[]> {
  const crds = channel === 'standard' ? standardCrdFiles() : experimentalCrdFiles();
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
