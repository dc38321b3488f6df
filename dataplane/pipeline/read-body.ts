/** Reads a whole request body, for a plugin that needs it before the upstream (bounded: the limit is checked as it grows). */
import type { IncomingMessage } from 'node:http';
import { BodyTooLargeError } from '../upstream/errors.ts';

export async function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of req) {
    length += (chunk as Buffer).length;
    if (length > max) throw new BodyTooLargeError(`request body exceeds ${max} bytes`);
    chunks.push(chunk as Buffer);
  }
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, length);
}
