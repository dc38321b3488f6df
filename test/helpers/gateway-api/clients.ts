/**
 * Clients for the conformance tests, one per protocol a Gateway listener or echo back end speaks:
 * HTTP/1.1 (and HTTPS), h2c with prior knowledge, WebSocket and gRPC (GrpcEcho). Each gives the
 * echo's answer parsed when the body is one, so a test can say which pod answered.
 */
import { connect } from 'node:http2';
import type { PeerCertificate } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { Agent, request } from 'undici';
import WebSocket from 'ws';
import type { EchoAnswer } from './echo.ts';
import { type GrpcEchoResponse, grpcEchoClient, grpcEchoDefinition } from './grpc-echo.ts';

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The body as an echo's answer, or null when it is not one (a redirect, a gateway's error). */
  answer: EchoAnswer | null;
}

export interface RequestOptions {
  method?: string;
  /** Header name → value; a Host header here is sent as the Host. */
  headers?: Record<string, string | string[]>;
  body?: string;
  /** For https URLs: the CA to trust (PEM) and the TLS server name (SNI). */
  ca?: string;
  servername?: string;
  /** For https URLs: the check of the server's name in its certificate (default Node's). */
  checkServerIdentity?: (host: string, cert: PeerCertificate) => Error | undefined;
  /** For https URLs: a client certificate (PEM) and its key. */
  cert?: string;
  key?: string;
}

const asAnswer = (body: string): EchoAnswer | null => {
  try {
    const a = JSON.parse(body) as EchoAnswer;
    return typeof a === 'object' && a !== null && typeof a.pod === 'string' ? a : null;
  } catch {
    return null;
  }
};

/** One HTTP/1.1 request (HTTPS with `ca`/`servername`), no redirects followed. */
export async function http1(url: string, o: RequestOptions = {}): Promise<Reply> {
  const tls = url.startsWith('https:');
  const dispatcher = tls
    ? new Agent({
        connect: {
          ca: o.ca,
          servername: o.servername,
          // Node refuses an undefined one: only when given.
          ...(o.checkServerIdentity && { checkServerIdentity: o.checkServerIdentity }),
          ...(o.cert && { cert: o.cert, key: o.key }),
        },
      })
    : undefined;
  try {
    const res = await request(url, {
      method: (o.method ?? 'GET') as 'GET',
      headers: o.headers,
      body: o.body,
      dispatcher,
    });
    const body = await res.body.text();
    return { status: res.statusCode, headers: res.headers, body, answer: asAnswer(body) };
  } finally {
    await dispatcher?.close();
  }
}

/** One request over h2c with prior knowledge (`url` is http://host:port/path). */
export async function h2c(
  url: string,
  o: Omit<RequestOptions, 'ca' | 'servername' | 'checkServerIdentity' | 'cert' | 'key'> = {},
): Promise<Reply> {
  const u = new URL(url);
  const session = connect(u.origin);
  try {
    const { host, ...headers } = o.headers ?? {};
    const stream = session.request({
      ':method': o.method ?? 'GET',
      ':path': u.pathname + u.search,
      ...(host ? { ':authority': String(host) } : {}),
      ...headers,
    });
    stream.end(o.body);
    const [status, resHeaders] = await new Promise<[number, Record<string, string | string[] | undefined>]>(
      (resolve, reject) => {
        stream.once('response', (h) => resolve([Number(h[':status']), h]));
        stream.once('error', reject);
        session.once('error', reject);
      },
    );
    let body = '';
    stream.setEncoding('utf8');
    for await (const chunk of stream) body += chunk;
    return { status, headers: resHeaders, body, answer: asAnswer(body) };
  } finally {
    session.close();
  }
}

/** Opens a WebSocket, sends `message`, resolves to the first message back; closes. */
export async function wsRoundTrip(
  url: string,
  message: string,
  headers: Record<string, string> = {},
): Promise<string> {
  const ws = new WebSocket(url, { headers });
  try {
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    });
    ws.send(message);
    const [data] = await new Promise<[WebSocket.RawData]>((resolve, reject) => {
      ws.once('message', (d) => resolve([d]));
      ws.once('close', (code) => reject(new Error(`closed (${code}) before a message came back`)));
    });
    return data.toString();
  } finally {
    ws.close();
  }
}

/**
 * One unary GrpcEcho call to `target` (host:port) over h2c. `authority` sets :authority (a
 * GRPCRoute's hostname); a failed call rejects with the grpc-js error (its `code` is the status).
 */
export async function grpcEcho(
  target: string,
  method: 'Echo' | 'EchoTwo' | 'EchoThree',
  o: { metadata?: Record<string, string>; authority?: string } = {},
): Promise<GrpcEchoResponse> {
  const Client = grpcEchoClient(grpcEchoDefinition());
  const client = new Client(target, grpc.credentials.createInsecure(), {
    ...(o.authority ? { 'grpc.default_authority': o.authority } : {}),
  });
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(o.metadata ?? {})) md.set(k, v);
  try {
    const call = client[method] as (
      r: object,
      m: grpc.Metadata,
      cb: grpc.requestCallback<GrpcEchoResponse>,
    ) => void;
    return await new Promise<GrpcEchoResponse>((resolve, reject) =>
      call.call(client, {}, md, (err, res) => (err ? reject(err) : resolve(res as GrpcEchoResponse))),
    );
  } finally {
    client.close();
  }
}
