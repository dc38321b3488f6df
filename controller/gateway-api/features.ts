/**
 * The Gateway API features Sluice supports, by their upstream names (the conformance suite's
 * pkg/features), as GatewayClass status.supportedFeatures lists them: sorted by name, as the
 * field requires. A feature is here only when our own test of its conformance tests passes
 * (test/gateway-api/), so the list and the tally tell the same story. Not listed, and why:
 *   - GatewayStaticAddresses, GatewayAddressEmpty: spec.addresses is not read (each Gateway's
 *     address is its Service's);
 *   - GatewayHTTPSListenerDetectMisdirectedRequests (421), GatewayListenerSet,
 *     GatewayBackendClientCertificate, HTTPRouteDestinationPortMatching: not built.
 * HTTPRouteRetry is listed though a rule's retry exists only where the experimental HTTPRoute
 * CRD carries it (the standard one prunes it): its test (http-retry.test.ts) runs on those CRDs.
 */
export const SUPPORTED_FEATURES: readonly string[] = [
  // Core.
  'GRPCRoute',
  'Gateway',
  'HTTPRoute',
  'ReferenceGrant',
  // Gateway, extended.
  'GatewayFrontendClientCertificateValidation',
  'GatewayFrontendClientCertificateValidationInsecureFallback',
  'GatewayHTTPListenerIsolation',
  'GatewayInfrastructurePropagation',
  'GatewayPort8080',
  // HTTPRoute, extended.
  'HTTPRoute303RedirectStatusCode',
  'HTTPRoute307RedirectStatusCode',
  'HTTPRoute308RedirectStatusCode',
  'HTTPRouteBackendProtocolH2C',
  'HTTPRouteBackendProtocolWebSocket',
  'HTTPRouteBackendRequestHeaderModification',
  'HTTPRouteBackendTimeout',
  'HTTPRouteCORS',
  'HTTPRouteHostRewrite',
  'HTTPRouteMethodMatching',
  'HTTPRouteNamedRouteRule',
  'HTTPRouteParentRefPort',
  'HTTPRoutePathRedirect',
  'HTTPRoutePathRewrite',
  'HTTPRoutePortRedirect',
  'HTTPRouteQueryParamMatching',
  'HTTPRouteRequestMirror',
  'HTTPRouteRequestMultipleMirrors',
  'HTTPRouteRequestPercentageMirror',
  'HTTPRouteRequestTimeout',
  'HTTPRouteResponseHeaderModification',
  'HTTPRouteRetry',
  'HTTPRouteSchemeRedirect',
].sort();
