/** Fluent builders of custom resources for controller tests: `gatewayRoute('charges').url(…).route(…).build()`. */
import { configField, type GatewayPlugin } from '../../controller/api/gateway-plugin.ts';
import type { GatewayRoute, RouteRule } from '../../controller/api/gateway-route.ts';
import type { PluginName } from '../../dataplane/config/catalog.ts';

type Service = GatewayRoute['spec']['service'];

export class RouteBuilder {
  #obj: GatewayRoute;

  constructor(name: string, namespace: string) {
    this.#obj = {
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'GatewayRoute',
      metadata: { name, namespace },
      spec: { service: { name }, routes: [] },
    };
  }

  url(url: string): this {
    this.#obj.spec.service.url = url;
    return this;
  }

  backendRef(name: string, port: number, scheme?: 'http' | 'https'): this {
    this.#obj.spec.service.backendRef = { name, port, ...(scheme && { scheme }) };
    return this;
  }

  balance(balance: NonNullable<Service['balance']>): this {
    this.#obj.spec.service.balance = balance;
    return this;
  }

  timeouts(timeouts: NonNullable<Service['timeouts']>): this {
    this.#obj.spec.service.timeouts = timeouts;
    return this;
  }

  /** Service-scope GatewayPlugin references. */
  plugins(...names: string[]): this {
    this.#obj.spec.plugins = names.map((name) => ({ name }));
    return this;
  }

  route(name: string, paths: string[], rest: Partial<Omit<RouteRule, 'name' | 'paths'>> = {}): this {
    this.#obj.spec.routes.push({ name, paths, ...rest });
    return this;
  }

  created(timestamp: string): this {
    this.#obj.metadata.creationTimestamp = timestamp;
    return this;
  }

  generation(generation: number): this {
    this.#obj.metadata.generation = generation;
    return this;
  }

  build(): GatewayRoute {
    return structuredClone(this.#obj);
  }
}

export function gatewayRoute(name: string, namespace = 'default'): RouteBuilder {
  return new RouteBuilder(name, namespace);
}

export function gatewayPlugin(
  name: string,
  plugin: PluginName,
  config: Record<string, unknown>,
  namespace = 'default',
): GatewayPlugin {
  return {
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'GatewayPlugin',
    metadata: { name, namespace },
    spec: { plugin, [configField(plugin)]: config },
  };
}

/** A request-transformer adding headers ("Name:value"). */
export function addHeaders(name: string, headers: string[], namespace = 'default'): GatewayPlugin {
  return gatewayPlugin(name, 'request-transformer', { add: { headers } }, namespace);
}
