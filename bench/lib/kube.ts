/**
 * What a bench writes to the API server, as an operator's tools would: server-side apply of
 * whole objects (idempotent, so a bench can run again on the same cluster), creates and deletes.
 * The controller's own client (controller/source/kube.ts) refuses calls the controller does not
 * make, so writes go through this one; reads (list + watch) use the controller's Informer.
 */
import { KubeConfig, RequestContext } from '@kubernetes/client-node';
import { fetch } from 'undici';

export interface KubeWriter {
  request(method: string, path: string, body?: unknown, contentType?: string): Promise<unknown>;
  /** Server-side apply of a whole object (field manager sluice-bench, conflicts forced). */
  apply(obj: {
    apiVersion: string;
    kind: string;
    metadata: { name: string; namespace?: string };
  }): Promise<unknown>;
}

const PLURALS: Record<string, string> = {
  GatewayRoute: 'gatewayroutes',
  GatewayPlugin: 'gatewayplugins',
  Secret: 'secrets',
  Service: 'services',
  EndpointSlice: 'endpointslices',
  Namespace: 'namespaces',
};

/** The REST path of an object. */
export function pathOf(obj: {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
}) {
  const base = obj.apiVersion.includes('/') ? `/apis/${obj.apiVersion}` : `/api/${obj.apiVersion}`;
  const ns = obj.metadata.namespace ? `/namespaces/${obj.metadata.namespace}` : '';
  return `${base}${ns}/${PLURALS[obj.kind]}/${obj.metadata.name}`;
}

export function kubeWriter(kubeconfig: string): KubeWriter {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const server = kc.getCurrentCluster()!.server.replace(/\/$/, '');
  let dispatcher: unknown; // one pool: applySecurityAuthentication makes a new Agent every call
  const request = async (method: string, path: string, body?: unknown, contentType = 'application/json') => {
    const ctx = new RequestContext(server + path, method as never);
    await kc.applySecurityAuthentication(ctx);
    dispatcher ??= ctx.getDispatcher();
    const res = await fetch(server + path, {
      method,
      headers: { ...ctx.getHeaders(), accept: 'application/json', 'content-type': contentType },
      body: body === undefined ? undefined : JSON.stringify(body),
      dispatcher: dispatcher as never,
      signal: AbortSignal.timeout(60_000),
    });
    const text = await res.text();
    if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
    return text ? JSON.parse(text) : undefined;
  };
  return {
    request,
    apply: (obj) =>
      request(
        'PATCH',
        `${pathOf(obj)}?fieldManager=sluice-bench&force=true`,
        obj,
        // JSON is YAML: the apply patch type takes it as it is.
        'application/apply-patch+yaml',
      ),
  };
}
