/**
 * A sample gRPC service for the demo and the README's curl lines: shop.v1.Catalog, served by
 * @grpc/grpc-js from the .proto text the `catalog` GatewayRoute in examples/gateway.yaml carries
 * (one copy of the proto: the one a user would write). GetItem answers any id but "missing"
 * (NOT_FOUND); CreateItem echoes the item with an id made from the shelf.
 */
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { fromJSON } from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { parseAllDocuments } from 'yaml';

/** The catalog route's proto text, from the demo configuration. */
function catalogProto(): string {
  const file = new URL('./gateway.yaml', import.meta.url);
  for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
    const o = doc.toJS() as {
      kind?: string;
      metadata?: { name?: string };
      spec?: { routes?: { grpc?: { protos: { content: string }[] } }[] };
    };
    if (o?.kind === 'GatewayRoute' && o.metadata?.name === 'catalog')
      return o.spec!.routes![0].grpc!.protos[0].content;
  }
  throw new Error('examples/gateway.yaml has no catalog GatewayRoute');
}

type Obj = Record<string, unknown>;

export async function startGrpcUpstream(
  port = 3006,
  host = '127.0.0.1',
): Promise<{ port: number; close(): Promise<void> }> {
  const root = protobuf.parse(catalogProto(), { keepCase: true }).root;
  const def = fromJSON(root.toJSON(), { keepCase: true, longs: String, enums: String, defaults: false });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    shop: { v1: { Catalog: { service: grpc.ServiceDefinition } } };
  };
  const server = new grpc.Server();
  server.addService(pkg.shop.v1.Catalog.service, {
    GetItem(call: grpc.ServerUnaryCall<Obj, Obj>, done: grpc.sendUnaryData<Obj>) {
      const id = String(call.request.item_id);
      if (id === 'missing') return done({ code: grpc.status.NOT_FOUND, details: `no item "${id}"` });
      done(null, {
        item_id: id,
        display_name: `Item ${id}`,
        price: { currency_code: 'EUR', units: '1299' },
        tags: ['sample'],
        stock_count: '9007199254740993',
      });
    },
    CreateItem(call: grpc.ServerUnaryCall<Obj, Obj>, done: grpc.sendUnaryData<Obj>) {
      const item = (call.request.item ?? {}) as Obj;
      done(null, { ...item, item_id: `${call.request.shelf}-${Date.now().toString(36)}` });
    },
  });
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return {
    port: bound,
    close: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
  };
}
