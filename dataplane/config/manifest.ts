/**
 * What the contract knows of a plugin or a terminal handler: its manifest. A manifest is plain
 * data the controller may read (name, phase, config schema, cross-field checks, how its Secret
 * references resolve, what it needs) and it imports nothing but the contract: no line of it
 * reaches the runtime. The data plane's registry (runtime/registry.ts, a higher layer) maps each
 * name to its implementation. So the controller validates every plugin's config without loading
 * a line of plugin runtime, and a plugin is still one folder: `manifest.ts` (this shape) beside
 * `index.ts` (what it does), one line in `catalog.ts` and one in the registry.
 */
import type { Static, TSchema } from '@sinclair/typebox';
import type { BackendSite } from './backend-ref.ts';
import type { ConfigProblem } from './config-problem.ts';
import type { Phase } from './phases.ts';

export interface PluginNeeds {
  /** The whole request body, read once (with the body limit) before this plugin's hook runs. */
  requestBody?: boolean;
  /** The response body: the plugin adds a tap (ResponseTap) to see it on its way to the client. */
  responseBody?: boolean;
  /** The TLS client certificate: the TLS listener asks clients for one while a route carries such a plugin. */
  clientCertificate?: boolean;
}

/** A path prefix a plugin answers itself: GET <path>/… on a route carrying it. */
export interface OwnPath {
  /** The last segment of the added route's id: route/<ns>/<name>/<route-name>/<name>. */
  name: string;
  /** The prefix, as the config says it (the controller normalizes it). */
  path: string;
  methods: readonly string[];
  /** The config field that sets it, for messages. */
  field: string;
}

export interface PluginManifest<S extends TSchema = TSchema, N extends string = string> {
  name: N;
  /** Where its hooks run (phases.ts). */
  phase: Phase;
  /** Its config: the CRD's validation of GatewayPlugin.config and validateRouteTable read this one schema. */
  schema: S;
  /** Rules across fields the schema cannot say; checked by the controller and at the data plane's door. */
  checks?: (config: Static<S>) => ConfigProblem[];
  /**
   * How the controller resolves the config's secretKeyRefs: the value's SHA-256 (enough to check
   * a presented credential) or the value itself, base64 (keys that verify). Default sha256.
   */
  secrets?: 'sha256' | 'value';
  needs?: PluginNeeds;
  /**
   * Paths the plugin answers itself, on the routes that carry it (e.g. idempotency's operation
   * lookup): the controller adds a route for each one no route carrying the plugin matches
   * (controller/compile/plugin-paths.ts), so users do not write that plumbing.
   */
  ownPaths?: (config: Static<S>) => OwnPath[];
  /**
   * State every process must share, which in memory would be per worker: with --workers N and
   * no --redis, the cluster primary refuses a snapshot carrying the plugin, saying what and why.
   */
  sharedState?: { what: string; why: string };
}

export interface HandlerManifest<
  S extends TSchema = TSchema,
  K extends string = string,
  U extends TSchema = TSchema,
> {
  /** The route table's handler.type. */
  kind: K;
  /** The handler's entry in the route table (its `type` a literal of `kind`). */
  schema: S;
  /** The upstreams the entry refers to (its field and the id): each must exist in the table. */
  upstreams: (handler: Static<S>) => { field: string; id: string }[];
  /**
   * Rules across the entry's fields the schema cannot say, and between the entry and its route
   * (a redirect's ReplacePrefixMatch needs a Prefix match); checked at the data plane's door.
   */
  checks?: (handler: Static<S>, route: HandlerSite) => ConfigProblem[];
  /** requestBody: true, or per entry (a proxy with mirrors reads bodies whole; one without streams them). */
  needs?: { requestBody?: boolean | ((handler: Static<S>) => boolean) };
  /**
   * How a GatewayRoute rule asks for this kind; absent for proxy (what a rule without one gets)
   * and for the kinds only Gateway API rules compile to (redirect, respond).
   */
  route?: HandlerRoute<U, S>;
}

/**
 * What a handler's checks may read of the route that carries it: its path match. Written out
 * rather than taken from route-table.ts, which imports the catalog (the contract has no cycles).
 */
export interface HandlerSite {
  match: { path: { type: 'Exact' | 'Prefix' | 'RegularExpression'; value: string } };
}

/**
 * The user's side of a handler kind: `routes[].<field>` in a GatewayRoute, and the pure
 * translation of that config into the route table. The controller reads only this (the CRD
 * schema, validation, Service references, compile), so a new kind is its folder and a catalog line.
 */
export interface HandlerRoute<U extends TSchema, S extends TSchema> {
  /** The rule's field that chooses this kind, e.g. "aggregate". */
  field: string;
  /** Its config as the user writes it (the CRD's schema and the controller's check). */
  schema: U;
  /** Rules across fields; each problem's field is relative to the config. */
  checks?: (config: Static<U>) => ConfigProblem[];
  /** The methods the kind serves: a rule's `methods` must be among them. */
  methods?: readonly string[];
  /** Every url/backendRef the config names. Read defensively: it also runs on configs that failed the schema. */
  backends: (config: unknown) => BackendSite[];
  /**
   * The upstreams it calls, given the url each backend resolved to (backends' order) and the
   * service's (a kind that calls the route's own service, e.g. soap): the controller adds the
   * service's timeouts, retries and breaker, `requestMs` lowering the deadline.
   */
  upstreams: (
    config: Static<U>,
    urls: readonly string[],
    /** The GatewayRoute's service url (service.url, or its backendRef resolved), for kinds that call it. */
    serviceUrl: string,
  ) => { url: string; requestMs?: number }[];
  /** Its route-table entry, given the ids of those upstreams (same order). */
  entry: (config: Static<U>, upstreamIds: readonly string[]) => Static<S>;
}

/** Typed identity: keeps the schema's static type attached to `checks`. */
export const pluginManifest = <S extends TSchema, const N extends string>(
  m: PluginManifest<S, N>,
): PluginManifest<S, N> => m;
export const handlerManifest = <S extends TSchema, const K extends string, U extends TSchema = TSchema>(
  m: HandlerManifest<S, K, U>,
): HandlerManifest<S, K, U> => m;

// biome-ignore lint/suspicious/noExplicitAny: the catalog holds manifests of every config type
export type AnyPluginManifest = PluginManifest<any>;

/**
 * The field the controller writes beside each secretKeyRef of a plugin's config (`secrets`,
 * default sha256): the one definition both its resolution and the redaction of GET
 * /debug/config read, so a value from a Secret is redacted wherever it was put.
 */
export const resolvedSecretField = (m: AnyPluginManifest | undefined): 'sha256' | 'value' =>
  m?.secrets ?? 'sha256';
// biome-ignore lint/suspicious/noExplicitAny: likewise for every handler entry type
export type AnyHandlerManifest = HandlerManifest<any, string, any>;
