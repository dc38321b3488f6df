/**
 * The gRPC echo of the Gateway API conformance suite (echo-basic with GRPC_ECHO_SERVER set, as
 * the grpc-infra-backend-v1…v3 Deployments run it): the service
 * gateway_api_conformance.echo_basic.grpcecho.GrpcEcho, over h2c, answering Echo and EchoTwo
 * with the call's method, metadata, :authority and the pod's namespace and name, so a GRPCRoute
 * test can tell which back end answered; EchoThree is UNIMPLEMENTED, as upstream. A real
 * @grpc/grpc-js server; the messages are declared below with upstream's field numbers, which
 * clients on the wire depend on.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as loader from '@grpc/proto-loader';
import { canonicalHeader, type EchoAnswer, type EchoServer } from './echo.ts';

export const GRPC_ECHO_SERVICE = 'gateway_api_conformance.echo_basic.grpcecho.GrpcEcho';

/** The messages and service, with upstream's package, names and field numbers. */
export const GRPC_ECHO_PROTO = `syntax = "proto3";
package gateway_api_conformance.echo_basic.grpcecho;

message Header { string key = 1; string value = 2; }
message Context { string namespace = 1; string ingress = 2; string service_name = 3; string pod = 4; }
message TLSAssertions {
  string version = 1; string negotiated_protocol = 2; string server_name = 3;
  string cipher_suite = 4; repeated string peer_certificates = 5;
}
message Assertions {
  string fully_qualified_method = 1;
  repeated Header headers = 2;
  string authority = 3;
  Context context = 4;
  TLSAssertions tls_assertions = 5;
}
message EchoRequest {}
message EchoResponse { Assertions assertions = 1; EchoRequest request = 2; }

service GrpcEcho {
  rpc Echo(EchoRequest) returns (EchoResponse) {}
  rpc EchoTwo(EchoRequest) returns (EchoResponse) {}
  rpc EchoThree(EchoRequest) returns (EchoResponse) {}
}
`;

/** The decoded EchoResponse, as a client loading GRPC_ECHO_PROTO with keepCase gets it. */
export interface GrpcEchoResponse {
  assertions: {
    fully_qualified_method: string;
    headers: Array<{ key: string; value: string }>;
    authority: string;
    context: { namespace: string; ingress: string; service_name: string; pod: string };
  };
}

/** The package definition (for a server here, or a client in a test): keepCase, defaults filled. */
export function grpcEchoDefinition(): grpc.GrpcObject {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-grpcecho-'));
  try {
    const file = join(dir, 'grpcecho.proto');
    writeFileSync(file, GRPC_ECHO_PROTO);
    return grpc.loadPackageDefinition(loader.loadSync(file, { keepCase: true, defaults: true }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The GrpcEcho client constructor of a definition from grpcEchoDefinition(). */
export function grpcEchoClient(def: grpc.GrpcObject): grpc.ServiceClientConstructor {
  let at: unknown = def;
  for (const part of GRPC_ECHO_SERVICE.split('.')) at = (at as Record<string, unknown>)[part];
  return at as grpc.ServiceClientConstructor;
}

type Call = grpc.ServerUnaryCall<unknown, unknown>;

export async function startGrpcEcho(o: {
  host: string;
  port: number;
  namespace: string;
  pod: string;
}): Promise<EchoServer> {
  const requests: EchoAnswer[] = [];
  const echo = (call: Call, done: grpc.sendUnaryData<unknown>) => {
    const headers = Object.entries(call.metadata.getMap()).map(([key, v]) => ({ key, value: String(v) }));
    const method = call.getPath();
    requests.push({
      path: method,
      host: call.getHost(),
      method: 'POST',
      proto: 'HTTP/2.0',
      headers: Object.fromEntries(headers.map((h) => [canonicalHeader(h.key), [h.value]])),
      namespace: o.namespace,
      pod: o.pod,
    });
    done(null, {
      assertions: {
        fully_qualified_method: method,
        headers,
        authority: call.getHost(),
        context: { namespace: o.namespace, ingress: '', service_name: '', pod: o.pod },
      },
    });
  };
  const server = new grpc.Server();
  server.addService(grpcEchoClient(grpcEchoDefinition()).service, {
    Echo: echo,
    EchoTwo: echo,
    EchoThree: (_call: Call, done: grpc.sendUnaryData<unknown>) =>
      done({ code: grpc.status.UNIMPLEMENTED, details: 'EchoThree is not implemented' }),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${o.host}:${o.port}`, grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return {
    host: o.host,
    port,
    namespace: o.namespace,
    pod: o.pod,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.forceShutdown();
        resolve();
      }),
  };
}
