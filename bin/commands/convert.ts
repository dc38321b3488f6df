/** `sluice convert`: Ingress YAML (ingress-nginx annotations) → GatewayRoutes or Gateway API HTTPRoutes. */
import { parseAllDocuments } from 'yaml';
import { convertToHTTPRoutes } from '../../controller/ingress/convert-gateway-api.ts';
import { convertToGatewayRoutes, renderConverted } from '../../controller/ingress/convert.ts';
import { type Command, failIn, parseCommand } from '../lib/command.ts';
import { joinDocuments, readAll } from '../lib/read-files.ts';

const flags = {
  file: {
    type: 'string',
    short: 'f',
    multiple: true,
    arg: 'FILE|DIR|-',
    help: 'a file, a directory of *.yaml/*.yml files, or - for standard input (repeatable)',
  },
  to: {
    type: 'string',
    arg: 'sluice|gateway-api',
    help: 'sluice (default): GatewayRoutes and GatewayPlugins; gateway-api: HTTPRoutes (and GatewayPlugins by ExtensionRef)',
  },
  gateway: {
    type: 'string',
    arg: 'NAMESPACE/NAME',
    help: "with --to gateway-api: the Gateway the HTTPRoutes attach to (parentRefs); NAME alone: the route's namespace",
  },
} as const;

export const convert: Command<typeof flags> = {
  name: 'convert',
  summary: 'turn Ingresses (ingress-nginx annotations) into GatewayRoutes, or HTTPRoutes',
  usage: 'sluice convert -f FILE|DIR|- [-f …] [--to sluice|gateway-api] [--gateway NAMESPACE/NAME]',
  about: [
    'Reads networking.k8s.io/v1 Ingresses (other objects are skipped; `kind: List` is read too) and',
    'prints, on stdout, objects that do what the Ingress did under Sluice: GatewayRoutes (one per',
    'Ingress and backend Service) with GatewayPlugins for cors, limit-rps/-rpm and x-forwarded-prefix;',
    'or, with --to gateway-api, HTTPRoutes (one per Ingress and host) attached to the --gateway,',
    'redirects as RequestRedirect filters and the plugins as ExtensionRef filters. The annotations',
    'are read as the controller reads them (docs/ingress.md). Every Ingress is converted whatever',
    'its class. What the output cannot hold is listed on stderr, naming the Ingress, the field or',
    'annotation and why, and the command exits 1; 0 when everything was converted.',
  ].join('\n'),
  flags,
  examples: [
    'sluice convert -f ingress.yaml > routes.yaml',
    'kubectl get ingress -A -o yaml | sluice convert -f - | kubectl apply -f -',
    'sluice convert --to gateway-api --gateway gateways/public -f manifests/',
  ],
  async main(argv) {
    const values = parseCommand(convert, argv);
    const paths = values.file ?? [];
    if (!paths.length) failIn('convert', 'needs at least one -f FILE|DIR|-');
    const to = values.to ?? 'sluice';
    if (to !== 'sluice' && to !== 'gateway-api')
      failIn('convert', `--to must be sluice or gateway-api, not ${JSON.stringify(to)}`);
    const gateway = gatewayOf(values.gateway, to);
    let failed = false;
    const objects: unknown[] = [];
    for (const { file, text } of await readAll('convert', paths))
      for (const doc of parseAllDocuments(text)) {
        if (doc.errors.length) {
          // Nothing of a document that does not parse is converted: say so, and go on.
          process.stderr.write(`sluice convert: ${file}: ${doc.errors[0].message.split('\n')[0]}\n`);
          failed = true;
          continue;
        }
        objects.push(doc.toJS());
      }
    const out = renderConverted(
      gateway ? convertToHTTPRoutes(objects, gateway) : convertToGatewayRoutes(objects),
    );
    process.stdout.write(joinDocuments([out.yaml]));
    for (const line of out.leftOut) process.stderr.write(`sluice convert: left out: ${line}\n`);
    if (failed || out.leftOut.length) process.exit(1);
  },
};

function gatewayOf(flag: string | undefined, to: string): { namespace?: string; name: string } | undefined {
  if (to !== 'gateway-api') {
    if (flag !== undefined) failIn('convert', '--gateway goes with --to gateway-api');
    return undefined;
  }
  if (flag === undefined)
    failIn('convert', '--to gateway-api needs --gateway NAMESPACE/NAME (the parentRef)');
  const m = /^(?:([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/)?([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/.exec(flag);
  if (!m) failIn('convert', `--gateway must be NAMESPACE/NAME or NAME, not ${JSON.stringify(flag)}`);
  return { ...(m[1] && { namespace: m[1] }), name: m[3] };
}
