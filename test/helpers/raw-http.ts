/** Sends raw bytes on a fresh TCP connection and returns everything the server wrote until it closed (or a timeout). */
import { connect } from 'node:net';

export function rawRequest(url: string, text: string, timeoutMs = 3_000): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let out = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(out);
    }, timeoutMs);
    socket.on('data', (d) => {
      out += d.toString('latin1');
    });
    socket.on('error', (e) => {
      clearTimeout(timer);
      out ? resolve(out) : reject(e);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
    socket.write(text);
  });
}

/** Status code of the first response in a raw reply. */
export const statusOf = (reply: string) => Number(/^HTTP\/1\.[01] (\d{3})/.exec(reply)?.[1] ?? 0);
