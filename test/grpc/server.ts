/**
 * A real @grpc/grpc-js server on loopback serving shop.v1.Catalog (catalog.proto.ts), loaded by
 * @grpc/proto-loader: GetItem (a full Item: nested, enum, int64, bytes, repeated, map), CreateItem,
 * Echo (answers the request it decoded, sets metadata both ways), Fail (answers the gRPC status it
 * is asked for), Slow, Watch (server streaming), Tally (client streaming) and Chat (both ways).
 * It counts the calls it receives, per method, and keeps the :authority of the last.
 * catalogClient is a grpc-js client of the same service, for calls through the gateway as is.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as loader from '@grpc/proto-loader';
import { CATALOG_PROTO } from './catalog.proto.ts';

export interface TestGrpcServer {
  port: number;
  url: string;
  /** HTTP/2 connections the server has accepted. */
  connections(): number;
  /** Calls received, by method name. */
  calls: Record<string, number>;
  /** Calls the client cancelled, by method name (counted where the server notices). */
  cancelled: Record<string, number>;
  /** The metadata of the last call, by method name. */
  metadata: Record<string, grpc.Metadata>;
  /** The :authority of the last call, by method name. */
  authority: Record<string, string>;
  close(): Promise<void>;
}

type Call = grpc.ServerUnaryCall<Record<string, unknown>, unknown>;
type Done = grpc.sendUnaryData<unknown>;

/** shop.v1.Catalog as grpc-js loads it (longs and enums as strings). */
function catalogService(): grpc.ServiceClientConstructor {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-grpc-'));
  // The server has no google/api protos to import: the annotation is the gateway's business only.
  const file = join(dir, 'catalog.proto');
  writeFileSync(
    file,
    CATALOG_PROTO.replace('import "google/api/annotations.proto";', '').replace(
      /option \(google\.api\.http\)[^;]*;/g,
      '',
    ),
  );
  const def = loader.loadSync(file, { keepCase: true, longs: String, enums: String, defaults: false });
  rmSync(dir, { recursive: true, force: true });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    shop: { v1: { Catalog: grpc.ServiceClientConstructor } };
  };
  return pkg.shop.v1.Catalog;
}

/** A grpc-js client of shop.v1.Catalog at `address` ("host:port"), in clear text (h2c with prior knowledge). */
export function catalogClient(address: string, options: grpc.ClientOptions = {}): grpc.Client {
  const Catalog = catalogService();
  return new Catalog(address, grpc.credentials.createInsecure(), options);
}

export async function startGrpcServer(
  opts: {
    credentials?: grpc.ServerCredentials;
    port?: number;
    host?: string;
    /** grpc-js server options (e.g. grpc.max_concurrent_streams). */
    options?: grpc.ServerOptions;
  } = {},
): Promise<TestGrpcServer> {
  const Catalog = catalogService();
  const calls: Record<string, number> = {};
  const metadata: Record<string, grpc.Metadata> = {};
  const authority: Record<string, string> = {};
  const cancelled: Record<string, number> = {};
  const peers = new Set<string>();
  const counted = (name: string, fn: (call: Call, done: Done) => void) => (call: Call, done: Done) => {
    calls[name] = (calls[name] ?? 0) + 1;
    peers.add(call.getPeer()); // the client's address and port: one per connection
    metadata[name] = call.metadata;
    authority[name] = call.getHost();
    fn(call, done);
  };
  const server = new grpc.Server(opts.options);
  server.addService(Catalog.service, {
    GetItem: counted('GetItem', (call, done) => {
      const r = call.request;
      if (r.item_id === 'missing') return done({ code: grpc.status.NOT_FOUND, details: 'no item "missing"' });
      done(null, {
        item_id: r.item_id,
        display_name: 'Blue mug',
        price: { currency_code: 'EUR', units: '9007199254740993' },
        color: 'GREEN',
        tags: r.with_tags ? ['kitchen', 'blue'] : [],
        thumbnail: Buffer.from([0, 1, 2, 250, 251, 255]),
        stock_count: '-12',
        counts: { a: 1, b: 2 },
        on_sale: true,
        weight: 0.25,
        history: [
          { currency_code: 'EUR', units: '10' },
          { currency_code: 'USD', units: '11' },
        ],
      });
    }),
    CreateItem: counted('CreateItem', (call, done) => {
      const r = call.request as { shelf: string; item?: Record<string, unknown> };
      done(null, { ...r.item, item_id: `${r.shelf}/${String(r.item?.display_name ?? '')}` });
    }),
    Echo: counted('Echo', (call, done) => {
      const tenant = call.metadata.get('x-tenant');
      const head = new grpc.Metadata();
      head.set('x-served-by', 'catalog-1');
      call.sendMetadata(head);
      const trailer = new grpc.Metadata();
      trailer.set('x-cost', String(tenant.length ? tenant[0] : 'none'));
      trailer.set('x-secret', 'not for clients');
      done(null, call.request, trailer);
    }),
    EchoEvent: counted('EchoEvent', (call, done) => done(null, call.request)),
    Lookup: counted('Lookup', (call, done) => done(null, call.request)),
    Fail: counted('Fail', (call, done) => {
      const r = call.request as { code?: number; message?: string };
      done({ code: r.code ?? 0, details: r.message ?? '' });
    }),
    Slow: counted('Slow', (call, done) => {
      const t = setTimeout(() => done(null, {}), Number(call.request.ms ?? 0));
      call.on('cancelled', () => {
        clearTimeout(t);
        cancelled.Slow = (cancelled.Slow ?? 0) + 1;
      });
    }),
    // A stream of page.size items named <item_id>-<n>; "fail-first" fails before any, "fail-after-2" after two.
    Watch: counted('Watch', (unaryCall) => {
      const call = unaryCall as unknown as grpc.ServerWritableStream<Record<string, unknown>, unknown>;
      const id = String(call.request.item_id ?? '');
      const size = Number((call.request.page as { size?: number } | undefined)?.size ?? 0);
      if (id === 'fail-first')
        return call.emit('error', { code: grpc.status.NOT_FOUND, details: 'nothing to watch' });
      if (id === 'slow') {
        let n = 0;
        const timer = setInterval(() => call.write({ item_id: `slow-${n++}` }), 50);
        call.on('cancelled', () => {
          clearInterval(timer);
          cancelled.Watch = (cancelled.Watch ?? 0) + 1;
        });
        return;
      }
      for (let n = 0; n < size; n++) {
        if (id === 'fail-after-2' && n === 2)
          return call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'lost the feed' });
        call.write({ item_id: `${id}-${n}`, stock_count: String(n) });
      }
      call.end();
    }),
    // The ids of the requests streamed, joined by ",", and their count; cancelled calls are counted.
    Tally: (stream: grpc.ServerReadableStream<Record<string, unknown>, unknown>, done: Done) => {
      calls.Tally = (calls.Tally ?? 0) + 1;
      metadata.Tally = stream.metadata;
      const ids: string[] = [];
      stream.on('data', (r: Record<string, unknown>) => ids.push(String(r.item_id ?? '')));
      stream.on('end', () => done(null, { item_id: ids.join(','), stock_count: String(ids.length) }));
      stream.on('cancelled', () => {
        cancelled.Tally = (cancelled.Tally ?? 0) + 1;
      });
    },
    // Each request answered at once with an item "echo-<item_id>"; the call ends when the client's stream does.
    Chat: (stream: grpc.ServerDuplexStream<Record<string, unknown>, unknown>) => {
      calls.Chat = (calls.Chat ?? 0) + 1;
      stream.on('data', (r: Record<string, unknown>) =>
        stream.write({ item_id: `echo-${String(r.item_id)}` }),
      );
      stream.on('end', () => stream.end());
      stream.on('cancelled', () => {
        cancelled.Chat = (cancelled.Chat ?? 0) + 1;
      });
    },
  } as grpc.UntypedServiceImplementation);
  const host = opts.host ?? '127.0.0.1';
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      `${host}:${opts.port ?? 0}`,
      opts.credentials ?? grpc.ServerCredentials.createInsecure(),
      (err, p) => (err ? reject(err) : resolve(p)),
    ),
  );
  return {
    port,
    url: `http://${host}:${port}`,
    connections: () => peers.size,
    calls,
    cancelled,
    metadata,
    authority,
    close: () =>
      new Promise<void>((resolve) => {
        server.tryShutdown(() => resolve());
        setTimeout(() => server.forceShutdown(), 500).unref();
      }),
  };
}
