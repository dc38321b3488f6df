/**
 * HTTP/2 written frame by frame (RFC 9113 §4.1) over TLS, for tests of what no well-behaved
 * client does: floods, and a client that keeps its connection open after a GOAWAY.
 */
import { connect as tlsConnect, type TLSSocket } from 'node:tls';

/** One HTTP/2 frame: 24-bit length, type, flags, stream id (RFC 9113 §4.1). */
export function frame(
  type: number,
  flags: number,
  stream: number,
  payload: Buffer = Buffer.alloc(0),
): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream, 5);
  return Buffer.concat([h, payload]);
}
export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
export const SETTINGS = 0x4;
export const HEADERS = 0x1;
export const CONTINUATION = 0x9;
export const GOAWAY = 0x7;

/** An HPACK literal header field without indexing, new name (RFC 7541 §6.2.2), lengths < 127. */
export const literal = (name: string, value: string) =>
  Buffer.concat([
    Buffer.from([0x00, name.length]),
    Buffer.from(name),
    Buffer.from([value.length]),
    Buffer.from(value),
  ]);

/** A raw h2 connection over TLS that records the frames the server sends (GOAWAY's code) and its close. */
export interface Raw {
  socket: TLSSocket;
  goaway: number | null;
  closed: boolean;
  closedAt: number;
  /** It ended with ECONNRESET (the server closed with bytes unread) rather than a FIN. */
  reset: boolean;
}
export async function rawH2(port: number, ca: string, servername = 'localhost'): Promise<Raw> {
  const socket = tlsConnect({ host: '127.0.0.1', port, servername, ca, ALPNProtocols: ['h2'] });
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', resolve);
    socket.once('error', reject);
  });
  const raw: Raw = { socket, goaway: null, closed: false, closedAt: Number.NaN, reset: false };
  let buf = Buffer.alloc(0);
  socket.on('data', (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 9) {
      const len = buf.readUIntBE(0, 3);
      if (buf.length < 9 + len) break;
      if (buf[3] === GOAWAY) raw.goaway = buf.readUInt32BE(9 + 4);
      buf = buf.subarray(9 + len);
    }
  });
  socket.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'ECONNRESET') raw.reset = true;
  });
  socket.on('close', () => {
    raw.closed = true;
    raw.closedAt = performance.now();
  });
  socket.write(Buffer.concat([PREFACE, frame(SETTINGS, 0, 0)]));
  return raw;
}

export const RST_STREAM = 0x3;
