/**
 * `sluice convert` through the real binary: Ingress YAML from standard input, a file and a
 * directory; the objects on stdout (what controller/ingress/convert.ts makes: its golden tests
 * hold the details), what is left out on stderr naming the Ingress and the field or annotation,
 * exit 1 then and 0 when everything converts; usage errors exit 2.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function sluice(args: string[], stdin?: string): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--disable-warning=ExperimentalWarning', 'bin/sluice.ts', 'convert', ...args],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
}

const ingress = (name: string, annotations = '') => `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: ${name}
  namespace: shop
  annotations: {${annotations}}
spec:
  ingressClassName: nginx
  rules:
    - host: ${name}.example.test
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: ${name}, port: { number: 80 } } } }] }
`;
const kinds = (yaml: string) =>
  parseAllDocuments(yaml).map((d) => {
    const o = d.toJS() as { kind: string; metadata: { name: string } };
    return `${o.kind} ${o.metadata.name}`;
  });

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-convert-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('sluice convert', () => {
  it('reads standard input; all converted: the objects on stdout, nothing on stderr, exit 0', async () => {
    const r = await sluice(['-f', '-'], ingress('web', '"nginx.ingress.kubernetes.io/limit-rps": "5"'));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(kinds(r.stdout)).toEqual(['GatewayRoute web', 'GatewayPlugin web-rate-limiting']);
  });

  it('lists what is left out on stderr, naming the Ingress and the annotation, and exits 1', async () => {
    const file = join(dir, 'one.yaml');
    await writeFile(
      file,
      ingress(
        'web',
        '"nginx.ingress.kubernetes.io/server-snippet": "return 200;", "nginx.ingress.kubernetes.io/proxy-buffering": "on"',
      ),
    );
    const r = await sluice(['-f', file]);
    expect(r.code).toBe(1);
    expect(kinds(r.stdout)).toEqual(['GatewayRoute web']);
    expect(r.stderr.trimEnd().split('\n')).toEqual([
      'sluice convert: left out: Ingress shop/web: metadata.annotations[nginx.ingress.kubernetes.io/proxy-buffering]: nginx.ingress.kubernetes.io/proxy-buffering is not honoured by Sluice',
      'sluice convert: left out: Ingress shop/web: metadata.annotations[nginx.ingress.kubernetes.io/server-snippet]: nginx.ingress.kubernetes.io/server-snippet is never executed: Sluice runs no configuration text from objects',
    ]);
  });

  it("reads a directory's YAML files in name order, skipping other objects; --to gateway-api attaches to --gateway", async () => {
    const conf = join(dir, 'conf');
    await mkdir(conf);
    await writeFile(join(conf, 'b.yaml'), ingress('beta'));
    await writeFile(
      join(conf, 'a.yml'),
      `apiVersion: v1\nkind: Service\nmetadata: { name: alpha }\n---\n${ingress('alpha')}`,
    );
    await writeFile(join(conf, 'notes.txt'), ingress('ignored'));
    const r = await sluice(['-f', conf]);
    expect(r.code).toBe(0);
    expect(kinds(r.stdout)).toEqual(['GatewayRoute alpha', 'GatewayRoute beta']);
    const g = await sluice(['--to', 'gateway-api', '--gateway', 'gateways/public', '-f', conf]);
    expect(g.code).toBe(0);
    const routes = parseAllDocuments(g.stdout).map((d) => d.toJS());
    expect(routes.map((o) => `${o.kind} ${o.metadata.name}`)).toEqual(['HTTPRoute alpha', 'HTTPRoute beta']);
    expect(routes[0].spec.parentRefs).toEqual([{ namespace: 'gateways', name: 'public' }]);
    expect(routes[0].spec.rules[0].backendRefs).toEqual([{ name: 'alpha', port: 80 }]);
  });

  it('a document that does not parse is named and exits 1; the others are converted', async () => {
    const r = await sluice(['-f', '-'], `${ingress('web')}---\nkind: [unclosed\n`);
    expect(r.code).toBe(1);
    expect(kinds(r.stdout)).toEqual(['GatewayRoute web']);
    expect(r.stderr).toMatch(/^sluice convert: <stdin>: /);
  });

  it('usage errors exit 2 naming the flag', async () => {
    const cases: [string[], string][] = [
      [[], 'needs at least one -f'],
      [['-f', '-', '--to', 'istio'], '--to must be sluice or gateway-api'],
      [['-f', '-', '--to', 'gateway-api'], '--to gateway-api needs --gateway'],
      [['-f', '-', '--gateway', 'a/b'], '--gateway goes with --to gateway-api'],
      [['-f', '-', '--to', 'gateway-api', '--gateway', 'a/b/c'], '--gateway must be NAMESPACE/NAME'],
    ];
    const results = await Promise.all(cases.map(([args]) => sluice(args)));
    for (const [i, [args, message]] of cases.entries()) {
      expect(results[i].code, args.join(' ')).toBe(2);
      expect(results[i].stderr).toContain(`sluice convert: ${message}`);
    }
  });

  it('a file that cannot be read is named, exit 1 (as migrate)', async () => {
    const r = await sluice(['-f', join(dir, 'missing.yaml')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('missing.yaml cannot be read (ENOENT)');
  });
});
