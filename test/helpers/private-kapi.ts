/**
 * A private kapi (../shared/kapi: a real Kubernetes API server and etcd on loopback) for a test
 * that needs a server of its own: with RBAC enforced (KAPI_RBAC=1), which CI's shared kapi
 * does not do, or with flags of its own. State in a temporary directory, free ports (etcd also
 * takes ETCD_PORT+10 and +20), stopped by SIGKILL (its pid files) and the directory removed.
 *
 * ../shared belongs to this machine, not to the project: nothing a user runs may need it, so
 * a test built on this helper skips where it is absent (`kapiMissing` says why), except under
 * CI, where it fails (.ci/run starts kapi from there too).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { join, resolve } from 'node:path';
import { kubectl } from './kubectl.ts';

const ROOT = resolve(import.meta.dirname, '../..');
export const KAPI_DIR = resolve(ROOT, '..', 'shared', 'kapi');

/** Why a private kapi cannot start here (null: it can). */
export const kapiMissing: string | null = existsSync(join(KAPI_DIR, 'kapi-up.sh'))
  ? null
  : `${KAPI_DIR}/kapi-up.sh not found (a checkout of the project beside ../shared/kapi is needed)`;

/** One line of rbac-denials.log or rbac-allowed.log (rbac-authz.mjs). */
export interface RbacLine {
  user: string;
  groups: string[];
  verb: string;
  group?: string;
  resource?: string;
  subresource?: string;
  namespace?: string;
  name?: string;
  /** Non-resource requests (/api, /version …). */
  path?: string;
  /** Allowed: what allowed it ("RoleBinding ns/name", the role, the rule's index in it). */
  binding?: string;
  role?: string;
  rule?: number;
  /** Denied: why, as the 403 says. */
  reason?: string;
}

export interface PrivateKapi {
  /** KAPI_RUN: certificates, logs, pids. */
  run: string;
  /** The admin kubeconfig (group system:masters: never asks RBAC). */
  kubeconfig: string;
  /** kubectl as admin on this server (retried while transient); throws with kubectl's message. */
  kubectl(args: string[], input?: string): Promise<string>;
  /** GET `path` as admin, parsed: cheaper than kubectl for a test that polls. Throws on a status >= 400. */
  get<T>(path: string): Promise<T>;
  /**
   * A kubeconfig file for a ServiceAccount, as its token would authenticate it: user
   * system:serviceaccount:NS:NAME, groups system:serviceaccounts and system:serviceaccounts:NS.
   */
  serviceAccount(namespace: string, name: string): Promise<string>;
  /** rbac-denials.log / rbac-allowed.log, parsed (empty without RBAC). */
  denials(): RbacLine[];
  allowed(): RbacLine[];
  stop(): Promise<void>;
}

function sh(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((res, rej) => {
    execFile(cmd, args, { env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout, stderr) =>
      err ? rej(new Error(`${cmd} ${args.join(' ')} failed: ${err.message}\n${stderr}`)) : res(stdout),
    );
  });
}

function portFree(port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = createServer()
      .once('error', () => res(false))
      .listen(port, '127.0.0.1', () => s.close(() => res(true)));
  });
}

// In Linux's ephemeral range (32768-60999), away from the fixed ports people give kapi and
// etcd (16443, 23790…); a port checked free here is not handed out by the kernel once kapi binds it.
const randomPort = () => 40_000 + Math.floor(Math.random() * 20_000);

/** A port p with p, p+10 and p+20 free (etcd's client, peer and metrics ports). */
async function etcdPorts(avoid: number): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const p = randomPort();
    if ([p, p + 10, p + 20].includes(avoid)) continue;
    if ((await portFree(p)) && (await portFree(p + 10)) && (await portFree(p + 20))) return p;
  }
  throw new Error('no free ports for etcd');
}

async function apiPort(): Promise<number> {
  for (;;) {
    const p = randomPort();
    if (await portFree(p)) return p;
  }
}

/**
 * The complete lines of a log the authorizer appends to as the test reads it: the text after the
 * last newline is a line still being written (JSON.parse failed on one), read on the next call.
 */
function readLines(file: string): RbacLine[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  return text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as RbacLine);
}

export interface PrivateKapiOptions {
  /** KAPI_RBAC=1: every request not from system:masters is decided by the RBAC objects stored. */
  rbac?: boolean;
  /** KAPI_EXTRA_FLAGS. */
  extraFlags?: string;
}

const running = new Set<string>();

/** SIGKILLs the processes kapi-up.sh started in `run`, by their pid files; returns their pids. */
function killAll(run: string): number[] {
  const pids: number[] = [];
  for (const p of ['apiserver', 'rbac-authz', 'etcd'])
    try {
      const pid = Number(readFileSync(join(run, `${p}.pid`), 'utf8'));
      process.kill(pid, 'SIGKILL');
      pids.push(pid);
    } catch {}
  return pids;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

// Last resort, when the test worker exits without its afterAll.
process.once('exit', () => {
  for (const run of running) {
    killAll(run);
    rmSync(run, { recursive: true, force: true });
  }
});

/** Starts kapi on free ports in a temporary directory (about 2 s); throws if `kapiMissing`. */
export async function startPrivateKapi(o: PrivateKapiOptions = {}): Promise<PrivateKapi> {
  if (kapiMissing !== null) throw new Error(kapiMissing);
  const run = mkdtempSync(join(tmpdir(), 'sluice-kapi-'));
  const api = await apiPort();
  const env = {
    KAPI_RUN: run,
    API_PORT: String(api),
    ETCD_PORT: String(await etcdPorts(api)),
    KAPI_EXTRA_FLAGS: o.extraFlags ?? '',
    KAPI_NODE: process.execPath,
    ...(o.rbac ? { KAPI_RBAC: '1' } : {}),
  };
  running.add(run);
  // SIGKILL, not kapi-down.sh's SIGTERM: the API server's graceful shutdown took ~8.6 s here, and
  // this server's state is thrown away with it. Stopped means gone: its ports are free again.
  const stop = async () => {
    const pids = killAll(run);
    for (let i = 0; i < 100 && pids.some(alive); i++) await sleep(50);
    rmSync(run, { recursive: true, force: true });
    running.delete(run);
  };
  try {
    await sh(join(KAPI_DIR, 'kapi-up.sh'), [], env);
  } catch (e) {
    await stop();
    throw e;
  }
  const kubeconfig = join(run, 'kubeconfig');
  const pki = (f: string) => readFileSync(join(run, 'pki', f));
  const tls = { ca: pki('ca.crt'), cert: pki('admin.crt'), key: pki('admin.key') };
  return {
    run,
    kubeconfig,
    async kubectl(args, input) {
      const r = await kubectl(['--kubeconfig', kubeconfig, ...args], input);
      if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}):\n${r.stderr}`);
      return r.stdout;
    },
    get<T>(path: string): Promise<T> {
      return new Promise((res, rej) => {
        const req = request({ host: '127.0.0.1', port: api, path, ...tls, timeout: 10_000 }, (r) => {
          let body = '';
          r.setEncoding('utf8')
            .on('data', (d: string) => {
              body += d;
            })
            .on('end', () =>
              (r.statusCode ?? 500) >= 400
                ? rej(new Error(`GET ${path}: ${r.statusCode} ${body}`))
                : res(JSON.parse(body) as T),
            );
        });
        req.on('timeout', () => req.destroy(new Error(`GET ${path}: timed out`))).on('error', rej);
        req.end();
      });
    },
    async serviceAccount(namespace, name) {
      const file = join(run, `sa-${namespace}-${name}.kubeconfig`);
      await sh(
        join(KAPI_DIR, 'kapi-user.sh'),
        [
          '-o',
          file,
          `system:serviceaccount:${namespace}:${name}`,
          'system:serviceaccounts',
          `system:serviceaccounts:${namespace}`,
        ],
        env,
      );
      return file;
    },
    denials: () => readLines(join(run, 'rbac-denials.log')),
    allowed: () => readLines(join(run, 'rbac-allowed.log')),
    stop,
  };
}
