/** `sluice controller`: watch the custom resources, build snapshots, push them to data-plane pods, write status. */
import { createLogger } from '../../dataplane/observability/log.ts';
import { startTracing } from '../../dataplane/observability/tracing.ts';
import { type Command, failIn, intFlag, parseCommand } from '../lib/command.ts';
import { ADMIN_TOKEN_FLAGS, adminToken, LOG_LEVEL_FLAG, logLevel, stopOnSignals } from '../lib/process.ts';
import { tokenList } from '../../dataplane/config/admin-auth.ts';
import { RotatingFile } from '../lib/rotating-file.ts';
import { GATEWAY_SERVICE_TYPES, type GatewayServiceType } from '../../controller/api/gateway-api.ts';

const flags = {
  'dataplane-service': {
    type: 'string',
    arg: 'NS/NAME',
    help: "the data plane's headless admin Service (its EndpointSlices list the pods)",
  },
  'admin-port-name': {
    type: 'string',
    arg: 'NAME',
    help: 'port of that Service to push to (default admin; else its first port)',
  },
  'admin-scheme': { type: 'string', arg: 'http|https', help: 'how to reach the pods (default http)' },
  'admin-ca-file': {
    type: 'string',
    arg: 'FILE',
    help: "with https: the CA of the data planes' admin certificates",
  },
  'admin-tls-server-name': {
    type: 'string',
    arg: 'NAME',
    help: 'with https: the name in their certificate (pods are dialled by IP)',
  },
  'watch-namespaces': {
    type: 'string',
    arg: 'NS,NS',
    help: 'watch routes, plugins, Secrets and Services only in these namespaces (default: all)',
  },
  class: {
    type: 'string',
    arg: 'NAME',
    help:
      'serve only GatewayRoutes and GatewayPlugins labelled sluice.dev/class=NAME (default: those without\n' +
      'the label), so that two installations in one cluster never serve the same objects',
  },
  ...ADMIN_TOKEN_FLAGS,
  'metrics-port': { type: 'string', arg: 'N', help: '/metrics, /healthz, /readyz (default 9902)' },
  'metrics-host': { type: 'string', arg: 'ADDR', help: 'address of the metrics port (default 0.0.0.0)' },
  'lease-namespace': {
    type: 'string',
    arg: 'NS',
    help: "where the leader-election Lease lives (default: the service's namespace)",
  },
  'lease-name': { type: 'string', arg: 'NAME', help: 'the Lease (default sluice-controller)' },
  'lease-seconds': { type: 'string', arg: 'N', help: 'how long a dead leader blocks a standby (default 15)' },
  identity: { type: 'string', arg: 'ID', help: "this replica's name in the Lease (default hostname-pid)" },
  'resync-seconds': {
    type: 'string',
    arg: 'N',
    help: 'the leader asks each pod which snapshot it runs every N seconds (default 10)',
  },
  'gateway-api': {
    type: 'string',
    arg: 'on|off',
    help: 'serve Gateway API Gateways of our GatewayClasses (below) once the CRDs exist (default on)',
  },
  'gateway-controller-name': {
    type: 'string',
    arg: 'DOMAIN/PATH',
    help:
      'serve the GatewayClasses whose spec.controllerName is this (default sluice.dev/gateway-controller);\n' +
      'a second installation in the cluster takes another (sluice.dev/gateway-controller-team-b)',
  },
  ingress: {
    type: 'string',
    arg: 'on|off',
    help: 'serve networking.k8s.io/v1 Ingresses of the class below (default on)',
  },
  'ingress-class': {
    type: 'string',
    arg: 'NAME',
    help:
      'the Ingresses served: ingressClassName (or the legacy kubernetes.io/ingress.class annotation) NAME\n' +
      '(default sluice), or an IngressClass whose spec.controller is sluice.dev/ingress-controller',
  },
  'publish-service': {
    type: 'string',
    arg: 'NS/NAME',
    help:
      "the data plane's Service (in a watched namespace): its address goes into the Ingresses'\n" +
      'status.loadBalancer, its load-balancer ingress else its cluster IP (default: none written)',
  },
  'gateway-ports': {
    type: 'string',
    arg: 'FIRST-LAST',
    help: "data-plane ports for Gateway listeners (default 20000-20999): each Gateway's Service targets them",
  },
  'gateway-service-selector': {
    type: 'string',
    arg: 'K=V,K=V',
    help: "the data-plane pods' labels: the selector of the Service the controller makes for each Gateway",
  },
  'gateway-service-type': {
    type: 'string',
    arg: 'ClusterIP|LoadBalancer|NodePort',
    help: "the type of each Gateway's Service (default ClusterIP) unless its GatewayClass's parameters name one",
  },
  ...LOG_LEVEL_FLAG,
} as const;

export const controller: Command<typeof flags> = {
  name: 'controller',
  summary: 'the Kubernetes controller: watch, build, push to data-plane pods',
  usage: 'sluice controller --dataplane-service NS/NAME --admin-token-file FILE [flags]',
  about: [
    'Watches GatewayRoute, GatewayPlugin, Ingress, Secret and Service objects (in every namespace, or those',
    'of --watch-namespaces), builds one snapshot, pushes it',
    "by hash to every data-plane pod and writes the objects' status (Accepted, ResolvedRefs,",
    'Programmed). Every replica watches and builds; the holder of the Lease pushes and writes.',
    'The cluster comes from KUBECONFIG, else the in-cluster service account.',
  ].join('\n'),
  flags,
  examples: [
    'sluice controller --dataplane-service sluice/sluice-admin --admin-token-file /etc/sluice/token',
    'KUBECONFIG=~/.kube/config sluice controller --dataplane-service default/sluice-admin --admin-token t',
  ],
  notes: 'Signals: SIGTERM/SIGINT release the Lease and exit 0.',
  async main(argv) {
    const values = parseCommand(controller, argv);
    const service = values['dataplane-service'];
    if (!service || !/^[^/]+\/[^/]+$/.test(service))
      failIn('controller', 'needs --dataplane-service NAMESPACE/NAME');
    const scheme = values['admin-scheme'] ?? 'http';
    if (scheme !== 'http' && scheme !== 'https') failIn('controller', '--admin-scheme must be http or https');
    const token = adminToken('controller', values);
    if (tokenList(token).length === 0)
      failIn(
        'controller',
        "needs the data planes' admin token (--admin-token, --admin-token-file or SLUICE_ADMIN_TOKEN)",
      );
    const watchNamespaces = (values['watch-namespaces'] ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const badNs = watchNamespaces.find((ns) => !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(ns));
    if (badNs !== undefined) failIn('controller', `--watch-namespaces: ${badNs} is not a namespace name`);
    const className = values.class;
    if (className !== undefined && !/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/.test(className))
      failIn(
        'controller',
        `--class: ${JSON.stringify(className)} is not a label value (63 letters, digits, - _ . at most)`,
      );
    const gatewayApi = values['gateway-api'] ?? 'on';
    if (gatewayApi !== 'on' && gatewayApi !== 'off') failIn('controller', '--gateway-api must be on or off');
    const gatewayControllerName = values['gateway-controller-name'];
    if (
      gatewayControllerName !== undefined &&
      !(gatewayControllerName.length <= 253 && GATEWAY_CONTROLLER_NAME_SYNTAX.test(gatewayControllerName))
    )
      failIn(
        'controller',
        `--gateway-controller-name: ${JSON.stringify(gatewayControllerName)} is not a domain-prefixed path (example.com/name)`,
      );
    const ingress = values.ingress ?? 'on';
    if (ingress !== 'on' && ingress !== 'off') failIn('controller', '--ingress must be on or off');
    const ingressClass = values['ingress-class'];
    if (ingressClass !== undefined && !/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(ingressClass))
      failIn('controller', `--ingress-class: ${JSON.stringify(ingressClass)} is not an IngressClass name`);
    const publishService = values['publish-service'];
    if (
      publishService !== undefined &&
      !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(publishService)
    )
      failIn('controller', '--publish-service must be NAMESPACE/NAME');
    const gatewayPorts = portRange(values['gateway-ports'] ?? '20000-20999');
    const gatewayServiceSelector = labels(values['gateway-service-selector'] ?? '');
    const gatewayServiceType = values['gateway-service-type'] ?? 'ClusterIP';
    if (!(GATEWAY_SERVICE_TYPES as readonly string[]).includes(gatewayServiceType))
      failIn(
        'controller',
        `--gateway-service-type must be ${GATEWAY_SERVICE_TYPES.join(', ')}, not ${JSON.stringify(gatewayServiceType)}`,
      );
    const log = createLogger(logLevel('controller', values));
    // Loaded here, not at the top: the controller's modules are what `sluice run` and
    // `sluice dataplane` (the proxies) must not load (@kubernetes/client-node, when a kubeconfig
    // needs it, is loaded later still: controller/source/kube-access.ts).
    // The controller's spans go through @opentelemetry/api's global tracer (controller/tracing.ts):
    // registered here only when OTEL_* configures an exporter; else they stay the API's no-ops.
    const tracing = startTracing(process.env, { global: true, serviceName: 'sluice-controller' });
    const { startController } = await import('../../controller/main.ts');
    const c = await startController({
      log,
      dataplaneService: service,
      adminPortName: values['admin-port-name'] ?? 'admin',
      adminScheme: scheme,
      adminToken: token,
      watchNamespaces,
      className,
      adminCa: adminCa(values['admin-ca-file']),
      adminTlsServerName: values['admin-tls-server-name'],
      metricsHost: values['metrics-host'] ?? '0.0.0.0',
      metricsPort: intFlag('controller', values['metrics-port'], 'metrics-port', 9902),
      leaseNamespace: values['lease-namespace'] ?? service.split('/')[0],
      leaseName: values['lease-name'] ?? 'sluice-controller',
      identity: values.identity,
      leaseSeconds: intFlag('controller', values['lease-seconds'], 'lease-seconds', 15),
      resyncMs: 1000 * Math.max(1, intFlag('controller', values['resync-seconds'], 'resync-seconds', 10)),
      gatewayApi: gatewayApi === 'on',
      ...(gatewayControllerName !== undefined && { gatewayControllerName }),
      gatewayPorts,
      ingress: ingress === 'on',
      ...(ingressClass !== undefined && { ingressClass }),
      ...(publishService !== undefined && { publishService }),
      gatewayServiceSelector,
      gatewayServiceType: gatewayServiceType as GatewayServiceType,
    }).catch((err: Error) => failIn('controller', err.message, 1));
    stopOnSignals(log, 'stopping: releasing the lease', async () => {
      await c.close();
      await tracing?.shutdown(); // exports what is pending
    });
  },
};

/** GatewayClass spec.controllerName (the CRD's pattern for GatewayController): a domain, "/", a path. */
const GATEWAY_CONTROLLER_NAME_SYNTAX =
  /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$/;

/** "k=v,k=v" → labels (a label key with an optional prefix, a label value); anything else exits 2 naming the flag. */
function labels(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m =
      /^((?:[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)=([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/.exec(
        pair,
      );
    if (m === null)
      failIn(
        'controller',
        `--gateway-service-selector: ${JSON.stringify(pair)} is not KEY=VALUE with a label key and value`,
      );
    out[m[1]] = m[4] ?? '';
  }
  return out;
}

/** "20000-20999" → the range; anything else exits 2 naming the flag. */
function portRange(text: string): { first: number; last: number } {
  const m = /^(\d{1,5})-(\d{1,5})$/.exec(text);
  const first = Number(m?.[1]);
  const last = Number(m?.[2]);
  if (m === null || first < 1 || last > 65_535 || first > last)
    failIn('controller', `--gateway-ports must be FIRST-LAST within 1-65535, not ${JSON.stringify(text)}`);
  return { first, last };
}

/** --admin-ca-file, re-read when rotated (the old CA trusted for a grace period: rotating-file.ts). */
function adminCa(file: string | undefined): (() => readonly string[]) | undefined {
  if (file === undefined) return undefined;
  try {
    return new RotatingFile(file).values;
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    failIn('controller', `--admin-ca-file ${file} cannot be read (${why})`, 1);
  }
}
