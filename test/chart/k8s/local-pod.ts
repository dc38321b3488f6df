/**
 * A rendered Deployment's pod, run as a local process the way the kubelet would run it:
 * the container's args (the image's entrypoint is `sluice`, here `node bin/sluice.ts`), its
 * env (secretKeyRef values read from the Secrets applied to the API server), its volumes
 * (Secret and ConfigMap items written as files, emptyDirs as empty directories, under a
 * temporary directory), with two rewrites only a host needs: mount paths point into that
 * directory, and each container port becomes a free loopback port (0.0.0.0 becomes 127.0.0.1).
 * Anything the mapping does not know (another volume or env source) throws: a chart change
 * cannot slip past the wiring test unmapped.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ok } from '../../helpers/kubectl.ts';
import { type LaunchedProcess, launch } from '../../helpers/processes.ts';
import { freePort } from '../../helpers/servers.ts';
import type { Manifest } from '../helm.ts';

interface Container {
  name: string;
  args: string[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  ports?: { name: string; containerPort: number }[];
  volumeMounts?: { name: string; mountPath: string }[];
  readinessProbe?: { httpGet: { path: string; port: string; scheme?: 'HTTP' | 'HTTPS' } };
  livenessProbe?: { httpGet: { path: string; port: string; scheme?: 'HTTP' | 'HTTPS' } };
}

interface Volume {
  name: string;
  secret?: { secretName: string; items?: { key: string; path: string }[] };
  configMap?: { name: string };
  emptyDir?: object;
}

export interface LocalPod {
  name: string;
  process: LaunchedProcess;
  /** Container port (by name) → the local port it listens on. */
  ports: Record<string, number>;
  url(port: string, path?: string): string;
  args: string[];
  env: Record<string, string>;
}

export interface LocalPodOptions {
  /** kubectl on the API server that holds the pod's Secrets (default: KUBECONFIG's, as admin). */
  kubectl?: (args: string[]) => Promise<string>;
  /** More environment, e.g. KUBECONFIG with the pod's ServiceAccount identity (a token would give it). */
  env?: Record<string, string>;
  /** Bound on the wait for the probe (default 30 s). */
  readyTimeoutMs?: number;
}

async function objectData(
  kubectl: (args: string[]) => Promise<string>,
  kind: 'secret' | 'configmap',
  namespace: string,
  name: string,
) {
  const o = JSON.parse(await kubectl(['get', kind, name, '-n', namespace, '-o', 'json'])) as {
    data?: Record<string, string>;
  };
  const data = o.data ?? {};
  return kind === 'secret'
    ? Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]))
    : data;
}

/**
 * Starts replica `index` of a rendered Deployment, waiting (bounded) until the probe named by
 * `waitFor` answers 200 (the data plane is live long before it is ready: it needs a snapshot).
 */
export async function startLocalPod(
  deployment: Manifest,
  namespace: string,
  index: number,
  waitFor: 'readinessProbe' | 'livenessProbe',
  opts: LocalPodOptions = {},
): Promise<LocalPod> {
  const kubectl = opts.kubectl ?? ((args: string[]) => ok(args));
  const spec = deployment.spec.template.spec as { containers: Container[]; volumes?: Volume[] };
  if (spec.containers.length !== 1) throw new Error('one container per pod expected');
  const c = spec.containers[0];
  const name = `${deployment.metadata.name}-${index}`;
  const dir = mkdtempSync(join(tmpdir(), `sluice-pod-${name}-`));

  // Volumes → directories and files.
  const mounts = new Map<string, string>();
  for (const m of c.volumeMounts ?? []) {
    const v = spec.volumes?.find((x) => x.name === m.name);
    const local = join(dir, m.name);
    mkdirSync(local, { recursive: true });
    if (v?.secret || v?.configMap) {
      const data = v.secret
        ? await objectData(kubectl, 'secret', namespace, v.secret.secretName)
        : await objectData(kubectl, 'configmap', namespace, v.configMap!.name);
      const items = v.secret?.items ?? Object.keys(data).map((key) => ({ key, path: key }));
      for (const { key, path } of items) {
        if (data[key] === undefined) throw new Error(`${name}: volume ${m.name} has no key ${key}`);
        mkdirSync(dirname(join(local, path)), { recursive: true });
        writeFileSync(join(local, path), data[key]);
      }
    } else if (!v?.emptyDir) throw new Error(`${name}: volume ${m.name} is of a kind the test does not map`);
    mounts.set(m.mountPath, local);
  }

  // Ports → free loopback ports.
  const ports: Record<string, number> = {};
  const byNumber = new Map<string, number>();
  for (const p of c.ports ?? []) {
    ports[p.name] = await freePort();
    byNumber.set(String(p.containerPort), ports[p.name]);
  }

  const longestFirst = [...mounts.entries()].sort((a, b) => b[0].length - a[0].length);
  const args = c.args.map((arg, i) => {
    const prev = c.args[i - 1] ?? '';
    if (/-port$/.test(prev) && byNumber.has(arg)) return String(byNumber.get(arg));
    if (arg === '0.0.0.0') return '127.0.0.1';
    for (const [path, local] of longestFirst)
      if (arg === path || arg.startsWith(`${path}/`)) return local + arg.slice(path.length);
    return arg;
  });
  const env: Record<string, string> = {};
  for (const e of c.env ?? []) {
    if (e.value !== undefined) env[e.name] = e.value;
    else if (e.valueFrom?.secretKeyRef) {
      const { name: secret, key } = e.valueFrom.secretKeyRef;
      const value = (await objectData(kubectl, 'secret', namespace, secret))[key];
      if (value === undefined) throw new Error(`${name}: env ${e.name}: Secret ${secret} has no key ${key}`);
      env[e.name] = value;
    } else throw new Error(`${name}: env ${e.name} has a source the test does not map`);
  }

  const url = (port: string, path = '') => `http://127.0.0.1:${ports[port]}${path}`;
  const probe = c[waitFor]?.httpGet;
  if (!probe) throw new Error(`${name}: no ${waitFor}`);
  // An HTTPS probe (the admin port with TLS) is made as the kubelet makes it: no certificate check.
  const https = probe.scheme === 'HTTPS';
  const probeUrl = https
    ? url(probe.port, probe.path).replace(/^http:/, 'https:')
    : url(probe.port, probe.path);
  const process = await launch(args, probeUrl, dir, {
    what: name,
    readyTimeoutMs: opts.readyTimeoutMs ?? 30_000,
    env: { ...env, ...opts.env },
    insecureTls: https,
  });
  return { name, process, ports, url, args, env };
}
