/**
 * The upstream conformance tests (Gateway API v1.6.1) Sluice answers for, by profile, exactly as
 * issue 25 lists them. A test in test/gateway-api/ named exactly like one of these (a test or a
 * describe block) is that conformance test; tally.ts counts the ones that passed.
 */

export interface Profile {
  /** The label of its line in the test output: "<label>: N of M". */
  label: string;
  tests: readonly string[];
}

export const GATEWAY_HTTP_CORE: Profile = {
  label: 'GATEWAY-HTTP core',
  tests: [
    'HTTPRouteSimpleSameNamespace',
    'HTTPRouteCrossNamespace',
    'HTTPRouteExactPathMatching',
    'HTTPRouteHeaderMatching',
    'HTTPRouteMatching',
    'HTTPRouteMatchingAcrossRoutes',
    'HTTPRoutePathMatchOrder',
    'HTTPRouteHostnameIntersection',
    'HTTPRouteListenerHostnameMatching',
    'HTTPRouteHTTPSListener',
    'HTTPRouteMultipleGateways',
    'HTTPRouteWeight',
    'HTTPRouteRequestHeaderModifier',
    'HTTPRouteRedirectHostAndStatus',
    'HTTPRouteServiceTypes',
    'HTTPRouteNoBackendRefs',
    'HTTPRouteInvalidNonExistentBackendRef',
    'HTTPRouteInvalidBackendRefUnknownKind',
    'HTTPRouteInvalidCrossNamespaceBackendRef',
    'HTTPRouteInvalidCrossNamespaceParentRef',
    'HTTPRouteInvalidParentRefNotMatchingSectionName',
    'HTTPRouteInvalidReferenceGrant',
    'HTTPRouteReferenceGrant',
    'HTTPRoutePartiallyInvalidViaInvalidReferenceGrant',
    'HTTPRouteObservedGenerationBump',
    'GatewayWithAttachedRoutes',
    'GatewayObservedGenerationBump',
    'GatewayInvalidRouteKind',
    'GatewayInvalidTLSConfiguration',
    'GatewayListenerUnsupportedProtocol',
    'GatewayInvalidParametersRef',
    'GatewayModifyListeners',
    'GatewaySecretInvalidReferenceGrant',
    'GatewaySecretMissingReferenceGrant',
    'GatewaySecretReferenceGrantAllInNamespace',
    'GatewaySecretReferenceGrantSpecific',
    'GatewayClassObservedGenerationBump',
  ],
};

/** gRPC proxied end to end over HTTP/2. */
export const GATEWAY_GRPC_CORE: Profile = {
  label: 'GATEWAY-GRPC core',
  tests: [
    'GRPCExactMethodMatching',
    'GRPCRouteHeaderMatching',
    'GRPCRouteListenerHostnameMatching',
    'GRPCRouteWeight',
  ],
};

/** All HTTP features; one that cannot be served is named in the README and the GatewayClass's supportedFeatures. */
export const GATEWAY_HTTP_EXTENDED: Profile = {
  label: 'GATEWAY-HTTP extended',
  tests: [
    'HTTPRouteQueryParamMatching',
    'HTTPRouteMethodMatching',
    'HTTPRouteResponseHeaderModifier',
    'HTTPRouteBackendRequestHeaderModifier',
    'HTTPRouteRedirectPath',
    'HTTPRouteRedirectPort',
    'HTTPRouteRedirectScheme',
    'HTTPRouteRedirectPortAndScheme',
    'HTTPRoute303Redirect',
    'HTTPRoute307Redirect',
    'HTTPRoute308Redirect',
    'HTTPRouteRewriteHost',
    'HTTPRouteRewritePath',
    'HTTPRouteRequestMirror',
    'HTTPRouteRequestMultipleMirrors',
    'HTTPRouteRequestPercentageMirror',
    'HTTPRouteTimeoutRequest',
    'HTTPRouteTimeoutBackendRequest',
    'HTTPRouteRetry',
    'HTTPRouteCORS',
    'HTTPRouteBackendProtocolH2C',
    'HTTPRouteBackendProtocolWebSocket',
    'HTTPRouteNamedRule',
    'HTTPRouteListenerPortMatching',
    'GatewayHTTPListenerIsolation',
    'GatewayFrontendClientCertificateValidation',
  ],
};

export const PROFILES: readonly Profile[] = [GATEWAY_HTTP_CORE, GATEWAY_GRPC_CORE, GATEWAY_HTTP_EXTENDED];
