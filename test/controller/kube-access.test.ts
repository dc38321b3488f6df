/**
 * How the controller reads a kubeconfig without @kubernetes/client-node (kube-access.ts): the
 * current context's server, CA and client certificate (inline or as files, relative to the
 * kubeconfig), a token or token file, several files merged as kubectl merges them, a clear error
 * when there is no cluster. Reaching a real API server with it is what the k8s tests do.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadKubeAccess } from '../../controller/source/kube-access.ts';

const dir = mkdtempSync(join(tmpdir(), 'kube-access-'));
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const config = (current: string, user: string) => `
apiVersion: v1
kind: Config
current-context: ${current}
clusters:
- name: prod
  cluster: { server: "https://prod.example:6443/", insecure-skip-tls-verify: true }
- name: dev
  cluster: { server: "https://dev.example:6443", certificate-authority: ca.crt }
contexts:
- { name: prod, context: { cluster: prod, user: robot } }
- { name: dev, context: { cluster: dev, user: robot } }
users:
- name: robot
  user: ${user}
`;

describe('loadKubeAccess', () => {
  it("uses the current context's server and token", async () => {
    const kc = file('token.yaml', config('prod', '{ token: abc }'));
    const access = loadKubeAccess({ KUBECONFIG: kc });
    expect(access.server).toBe('https://prod.example:6443');
    const { headers, dispatcher } = await access.prepare(`${access.server}/api`, 'GET');
    expect(headers).toEqual({ authorization: 'Bearer abc' });
    expect(dispatcher).toBeDefined();
  });

  it('reads a token file and a CA file relative to the kubeconfig', async () => {
    file('ca.crt', 'not read until a connection is made');
    file('token', 'from-file\n');
    const kc = file('files.yaml', config('dev', '{ tokenFile: token }'));
    const access = loadKubeAccess({ KUBECONFIG: kc });
    expect(access.server).toBe('https://dev.example:6443');
    expect((await access.prepare(`${access.server}/api`, 'GET')).headers).toEqual({
      authorization: 'Bearer from-file',
    });
  });

  it('merges KUBECONFIG=a:b as kubectl does: the first file to set the current context wins', async () => {
    const a = file('a.yaml', 'apiVersion: v1\nkind: Config\ncurrent-context: dev\n');
    const b = file('b.yaml', config('prod', '{ username: u, password: p }'));
    const access = loadKubeAccess({ KUBECONFIG: `${a}:${join(dir, 'missing.yaml')}:${b}` });
    expect(access.server).toBe('https://dev.example:6443');
    expect((await access.prepare(`${access.server}/api`, 'GET')).headers).toEqual({
      authorization: `Basic ${Buffer.from('u:p').toString('base64')}`,
    });
  });

  it('names what is missing: no cluster at all, or plain HTTP without insecure-skip-tls-verify', () => {
    expect(() => loadKubeAccess({ HOME: dir })).toThrow(/no Kubernetes cluster: set KUBECONFIG/);
    const plain = file(
      'plain.yaml',
      'current-context: x\nclusters: [{ name: c, cluster: { server: "http://127.0.0.1:8080" } }]\n' +
        'contexts: [{ name: x, context: { cluster: c, user: u } }]\nusers: [{ name: u, user: {} }]\n',
    );
    expect(() => loadKubeAccess({ KUBECONFIG: plain })).toThrow(/plain HTTP/);
  });
});
