/**
 * How the controller reaches the API server: its URL, and for each request the headers
 * (credentials) and the one undici dispatcher (TLS: the cluster's CA, a client certificate).
 * Read from KUBECONFIG (or ~/.kube/config), else from the in-cluster service account, the way
 * client-go reads them.
 *
 * Optimization: @kubernetes/client-node is loaded only for what this file does not read itself
 * (a user authenticated by an exec plugin or an auth provider, a proxy-url): importing it costs
 * ~50 MB of RSS (its generated API models and their source text), a quarter of the small preset's
 * controller memory limit. A pod's service account and a kubeconfig with certificates or a token
 * need none of it.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Agent, type Dispatcher } from 'undici';
import { parse } from 'yaml';

export interface KubeAccess {
  /** https://host:port, no trailing slash. */
  readonly server: string;
  /** The headers and dispatcher of one request (credentials may rotate: asked per request). */
  prepare(url: string, method: string): Promise<{ headers: Record<string, string>; dispatcher?: Dispatcher }>;
}

const SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';
/** A token file is read again after this long: kubelet rotates projected tokens well before they expire. */
const TOKEN_REREAD_MS = 60_000;

/** KUBECONFIG (or ~/.kube/config), else the in-cluster service account. */
export function loadKubeAccess(env: NodeJS.ProcessEnv = process.env): KubeAccess {
  const files = (env.KUBECONFIG ?? '').split(':').filter(Boolean);
  const home = join(env.HOME ?? homedir(), '.kube', 'config');
  if (files.length === 0 && readable(home)) files.push(home);
  if (files.length) return fromKubeconfig(files);
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) return inCluster(env);
  throw new Error('no Kubernetes cluster: set KUBECONFIG or run in a cluster');
}

function readable(file: string): boolean {
  try {
    readFileSync(file);
    return true;
  } catch {
    return false;
  }
}

function inCluster(env: NodeJS.ProcessEnv): KubeAccess {
  const host = env.KUBERNETES_SERVICE_HOST!;
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${env.KUBERNETES_SERVICE_PORT}`;
  const dispatcher = new Agent({ connect: { ca: readFileSync(join(SERVICE_ACCOUNT, 'ca.crt')) } });
  const token = tokenFile(join(SERVICE_ACCOUNT, 'token'));
  return {
    server,
    prepare: async () => ({ headers: { authorization: `Bearer ${token()}` }, dispatcher }),
  };
}

function tokenFile(file: string): () => string {
  let token = '';
  let readAt = Number.NEGATIVE_INFINITY;
  return () => {
    if (Date.now() - readAt > TOKEN_REREAD_MS) {
      token = readFileSync(file, 'utf8').trim();
      readAt = Date.now();
    }
    return token;
  };
}

type Named = { name: string } & Record<string, unknown>;
interface Kubeconfig {
  'current-context'?: string;
  contexts?: Named[];
  clusters?: Named[];
  users?: Named[];
}
interface Cluster {
  server?: string;
  'certificate-authority'?: string;
  'certificate-authority-data'?: string;
  'insecure-skip-tls-verify'?: boolean;
  'tls-server-name'?: string;
  'proxy-url'?: string;
}
interface User {
  'client-certificate'?: string;
  'client-certificate-data'?: string;
  'client-key'?: string;
  'client-key-data'?: string;
  token?: string;
  tokenFile?: string;
  username?: string;
  password?: string;
  exec?: unknown;
  'auth-provider'?: unknown;
}

/** Several files (KUBECONFIG=a:b) merge as kubectl merges them: the first to set a name or the current context wins. */
function fromKubeconfig(files: string[]): KubeAccess {
  const merged: Required<Kubeconfig> = { 'current-context': '', contexts: [], clusters: [], users: [] };
  // A relative path in an entry is relative to the file the entry came from.
  const dirs = new Map<Named, string>();
  for (const file of files) {
    let doc: Kubeconfig;
    try {
      doc = (parse(readFileSync(file, 'utf8')) ?? {}) as Kubeconfig;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw new Error(`kubeconfig ${file}: ${(err as Error).message}`);
    }
    merged['current-context'] ||= doc['current-context'] ?? '';
    for (const k of ['contexts', 'clusters', 'users'] as const)
      for (const entry of doc[k] ?? [])
        if (!merged[k].some((e) => e.name === entry.name)) {
          merged[k].push(entry);
          dirs.set(entry, dirname(file));
        }
  }
  const find = (k: 'contexts' | 'clusters' | 'users', name: unknown) =>
    merged[k].find((e) => e.name === name);
  const context = find('contexts', merged['current-context'])?.context as
    | { cluster?: string; user?: string }
    | undefined;
  const clusterEntry = find('clusters', context?.cluster);
  const userEntry = find('users', context?.user);
  const cluster = (clusterEntry?.cluster ?? {}) as Cluster;
  const user = (userEntry?.user ?? {}) as User;
  if (!cluster.server) throw new Error('no Kubernetes cluster: set KUBECONFIG or run in a cluster');
  const server = cluster.server.replace(/\/$/, '');
  if (user.exec || user['auth-provider'] || cluster['proxy-url']) return viaClientNode(server);

  const path = (entry: Named | undefined, file: string) => resolve((entry && dirs.get(entry)) ?? '.', file);
  const bytes = (entry: Named | undefined, data: string | undefined, file: string | undefined) =>
    data ? Buffer.from(data, 'base64') : file ? readFileSync(path(entry, file)) : undefined;
  const ca = bytes(clusterEntry, cluster['certificate-authority-data'], cluster['certificate-authority']);
  const cert = bytes(userEntry, user['client-certificate-data'], user['client-certificate']);
  const key = bytes(userEntry, user['client-key-data'], user['client-key']);
  if (server.startsWith('http:') && !cluster['insecure-skip-tls-verify'])
    throw new Error(`kubeconfig: ${server} is plain HTTP; only with insecure-skip-tls-verify`);
  const dispatcher = server.startsWith('https:')
    ? new Agent({
        connect: {
          ...(ca && { ca }),
          ...(cert && { cert }),
          ...(key && { key }),
          ...(cluster['insecure-skip-tls-verify'] && { rejectUnauthorized: false }),
          ...(cluster['tls-server-name'] && { servername: cluster['tls-server-name'] }),
        },
      })
    : undefined;
  const token = user.token
    ? () => user.token!
    : user.tokenFile
      ? tokenFile(path(userEntry, user.tokenFile))
      : null;
  const basic =
    user.username !== undefined
      ? `Basic ${Buffer.from(`${user.username}:${user.password ?? ''}`).toString('base64')}`
      : null;
  return {
    server,
    prepare: async () => {
      const authorization = token ? `Bearer ${token()}` : basic;
      const headers: Record<string, string> = authorization ? { authorization } : {};
      return { headers, dispatcher };
    },
  };
}

/** Exec plugins, auth providers, proxies: @kubernetes/client-node, loaded on the first request. */
function viaClientNode(server: string): KubeAccess {
  let loaded: Promise<{
    kc: import('@kubernetes/client-node').KubeConfig;
    mod: typeof import('@kubernetes/client-node');
  }> | null = null;
  let dispatcher: Dispatcher | undefined;
  return {
    server,
    async prepare(url, method) {
      loaded ??= import('@kubernetes/client-node').then((mod) => {
        const kc = new mod.KubeConfig();
        kc.loadFromDefault();
        return { kc, mod };
      });
      const { kc, mod } = await loaded;
      const ctx = new mod.RequestContext(url, method as never);
      await kc.applySecurityAuthentication(ctx);
      // One pool: applySecurityAuthentication makes a new Agent on every call.
      dispatcher ??= ctx.getDispatcher() as Dispatcher | undefined;
      return { headers: ctx.getHeaders(), dispatcher };
    },
  };
}
