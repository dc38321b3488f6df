/**
 * admin.tls rendered: off by default (plain HTTP, as before); on, the data plane serves the
 * Secret's certificate and key, the controller holds only its CA and checks the name the
 * certificate is for, the probes and every scrape (annotations, ServiceMonitor, PodMonitor)
 * use HTTPS. The generated certificate really is signed by the generated CA for that name;
 * cert-manager and an existing Secret are the other sources. The production preset turns it on.
 * (test/chart/k8s/admin-tls.test.ts runs the pods so wired.)
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { find, helm, type Manifest, PRESETS, render, templateArgs } from './helm.ts';

const container = (ms: Manifest[], d: string) => find(ms, 'Deployment', d).spec.template.spec.containers[0];
const volumes = (ms: Manifest[], d: string) => find(ms, 'Deployment', d).spec.template.spec.volumes;
const flag = (args: string[], name: string) =>
  args.includes(name) ? args[args.indexOf(name) + 1] : undefined;
const on = { admin: { tls: { enabled: true } } };

describe('admin.tls', () => {
  it('off by default: no TLS flag, no Secret, probes over HTTP', async () => {
    const ms = await render();
    expect(container(ms, 'gw-sluice-dataplane').args).not.toContain('--admin-tls-cert');
    expect(container(ms, 'gw-sluice-controller').args).not.toContain('--admin-scheme');
    expect(ms.some((m) => m.metadata.name === 'gw-sluice-admin-tls')).toBe(false);
    expect(container(ms, 'gw-sluice-dataplane').readinessProbe.httpGet.scheme).toBe('HTTP');
  });

  it('generate: a CA and a certificate for <fullname>-admin.<namespace>.svc that the CA signed; the data plane mounts the key, the controller the CA only', async () => {
    const ms = await render({ values: on });
    const secret = find(ms, 'Secret', 'gw-sluice-admin-tls');
    expect(secret.type).toBe('kubernetes.io/tls');
    const pem = (k: string) => Buffer.from(secret.data[k], 'base64').toString();
    const cert = new X509Certificate(pem('tls.crt'));
    const ca = new X509Certificate(pem('ca.crt'));
    expect(cert.checkIssued(ca)).toBe(true);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.subjectAltName).toBe('DNS:gw-sluice-admin.sluice.svc');
    expect(cert.checkPrivateKey(createPrivateKey(pem('tls.key')))).toBe(true);

    const dp = container(ms, 'gw-sluice-dataplane');
    expect(flag(dp.args, '--admin-tls-cert')).toBe('/etc/sluice/admin-tls/tls.crt');
    expect(flag(dp.args, '--admin-tls-key')).toBe('/etc/sluice/admin-tls/tls.key');
    expect(dp.volumeMounts).toContainEqual({
      name: 'admin-tls',
      mountPath: '/etc/sluice/admin-tls',
      readOnly: true,
    });
    expect(volumes(ms, 'gw-sluice-dataplane')).toContainEqual({
      name: 'admin-tls',
      secret: {
        secretName: 'gw-sluice-admin-tls',
        items: [
          { key: 'tls.crt', path: 'tls.crt' },
          { key: 'tls.key', path: 'tls.key' },
        ],
      },
    });
    for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe'])
      expect(dp[probe].httpGet.scheme, probe).toBe('HTTPS');

    const ctl = container(ms, 'gw-sluice-controller');
    expect(flag(ctl.args, '--admin-scheme')).toBe('https');
    expect(flag(ctl.args, '--admin-ca-file')).toBe('/etc/sluice/admin-tls/ca.crt');
    expect(flag(ctl.args, '--admin-tls-server-name')).toBe('gw-sluice-admin.sluice.svc');
    expect(volumes(ms, 'gw-sluice-controller')).toContainEqual({
      name: 'admin-tls',
      secret: { secretName: 'gw-sluice-admin-tls', items: [{ key: 'ca.crt', path: 'ca.crt' }] },
    });
    // The controller's own metrics port stays plain HTTP.
    expect(ctl.readinessProbe.httpGet.scheme).toBeUndefined();
  });

  it('every scrape of the admin port is HTTPS: the annotation, the ServiceMonitor and the PodMonitor check the CA and name', async () => {
    const tlsConfig = {
      ca: { secret: { name: 'gw-sluice-admin-tls', key: 'ca.crt' } },
      serverName: 'gw-sluice-admin.sluice.svc',
    };
    const [sm, pm] = await Promise.all([
      render({ values: { ...on, metrics: { serviceMonitor: { enabled: true } } } }),
      render({ values: { ...on, metrics: { podMonitor: { enabled: true } } } }),
    ]);
    expect(find(sm, 'Deployment', 'gw-sluice-dataplane').spec.template.metadata.annotations).toMatchObject({
      'prometheus.io/scheme': 'https',
      'prometheus.io/port': '9901',
    });
    expect(
      find(sm, 'Deployment', 'gw-sluice-controller').spec.template.metadata.annotations,
    ).not.toHaveProperty('prometheus.io/scheme');
    expect(find(sm, 'ServiceMonitor', 'gw-sluice-dataplane').spec.endpoints[0]).toMatchObject({
      scheme: 'https',
      tlsConfig,
    });
    expect(find(sm, 'ServiceMonitor', 'gw-sluice-controller').spec.endpoints[0].scheme).toBeUndefined();
    expect(find(pm, 'PodMonitor', 'gw-sluice-dataplane').spec.podMetricsEndpoints[0]).toMatchObject({
      scheme: 'https',
      tlsConfig,
    });
    expect(find(pm, 'PodMonitor', 'gw-sluice-controller').spec.podMetricsEndpoints[0].scheme).toBeUndefined();
  });

  it('certManager: a Certificate for the server name into the Secret the pods mount; an issuer is required', async () => {
    const ms = await render({
      values: {
        admin: {
          tls: {
            enabled: true,
            source: 'certManager',
            serverName: 'admin.sluice.internal',
            certManager: { issuerRef: { name: 'cluster-ca', kind: 'ClusterIssuer' } },
          },
        },
      },
    });
    expect(find(ms, 'Certificate', 'gw-sluice-admin').spec).toMatchObject({
      secretName: 'gw-sluice-admin-tls',
      dnsNames: ['admin.sluice.internal'],
      issuerRef: { name: 'cluster-ca', kind: 'ClusterIssuer', group: 'cert-manager.io' },
    });
    expect(ms.some((m) => m.kind === 'Secret' && m.metadata.name === 'gw-sluice-admin-tls')).toBe(false);
    expect(flag(container(ms, 'gw-sluice-controller').args, '--admin-tls-server-name')).toBe(
      'admin.sluice.internal',
    );
    const bad = await helm([
      ...templateArgs(),
      '--set',
      'admin.tls.enabled=true',
      '--set',
      'admin.tls.source=certManager',
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/admin\.tls\.certManager\.issuerRef\.name: name the cert-manager Issuer/);
  });

  it('existingSecret: the pods mount it, nothing is generated; its name is required', async () => {
    const ms = await render({
      values: {
        admin: { tls: { enabled: true, source: 'existingSecret', existingSecret: 'corp-admin-tls' } },
      },
    });
    expect(ms.some((m) => m.metadata.name === 'gw-sluice-admin-tls' || m.kind === 'Certificate')).toBe(false);
    expect(
      volumes(ms, 'gw-sluice-dataplane').find((v: { name: string }) => v.name === 'admin-tls').secret
        .secretName,
    ).toBe('corp-admin-tls');
    const bad = await helm([
      ...templateArgs(),
      '--set',
      'admin.tls.enabled=true',
      '--set',
      'admin.tls.source=existingSecret',
    ]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/admin\.tls\.existingSecret: name the Secret/);
  });

  it('the production preset speaks TLS on the admin port', async () => {
    const ms = await render({ files: [PRESETS[2]] });
    expect(flag(container(ms, 'gw-sluice-controller').args, '--admin-scheme')).toBe('https');
    expect(find(ms, 'Secret', 'gw-sluice-admin-tls').data['ca.crt']).toBeTruthy();
  });
});
