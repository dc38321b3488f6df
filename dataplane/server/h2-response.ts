/**
 * The TLS listener's h2 response (node:http2's compatibility response), counting the body bytes
 * written to its stream. An h2 stream shares its session's socket with the session's other
 * streams, so the HTTP/1 way of measuring a response (the socket's bytesWritten across the
 * request) cannot tell concurrent streams apart, and Node keeps no byte count per stream. The
 * header block is not counted: HPACK compresses it against the connection's table, so its
 * size on the wire belongs to no one stream. pipeline/finish.ts reads the count (H2_BYTES_OUT)
 * for the access log's bytesOut and the per-consumer bytes.
 */
import { Http2ServerResponse } from 'node:http2';
import { H2_BYTES_OUT } from '../pipeline/finish.ts';

export class CountingResponse extends Http2ServerResponse {
  [H2_BYTES_OUT] = 0;

  // compat's end(chunk) writes its chunk through write(), so every body byte passes here once.
  override write(chunk: string | Uint8Array, encoding?: unknown, cb?: unknown): boolean {
    if (!this.writableEnded && !this.stream.destroyed)
      this[H2_BYTES_OUT] +=
        typeof chunk === 'string'
          ? Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
          : chunk.byteLength;
    return super.write(chunk, encoding as BufferEncoding, cb as (err: Error) => void);
  }
}
