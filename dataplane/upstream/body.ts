/** Request bodies, always bounded: read whole (the limit checked as it grows) or streamed with the same check. */
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { BodyTooLargeError } from './errors.ts';

export async function readBody(body: AsyncIterable<Buffer>, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of body) {
    length += chunk.length;
    if (length > max) throw new BodyTooLargeError(`request body exceeds ${max} bytes`);
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, length);
}

/** A chunked body (no Content-Length to check up front), streamed and refused once it passes the limit. */
export function limitedStream(req: IncomingMessage, max: number): Readable {
  return Readable.from(limited(req, max), { objectMode: false });
}

async function* limited(req: IncomingMessage, max: number): AsyncGenerator<Buffer> {
  let seen = 0;
  for await (const chunk of req) {
    seen += chunk.length;
    if (seen > max) throw new BodyTooLargeError(`request body exceeds ${max} bytes`);
    yield chunk;
  }
}
