/** GET a provider document (a JWKS, OpenID metadata) as JSON: 200 only, time and size bounded. */
import { request } from 'undici';

export async function fetchJson(url: string, timeoutMs: number, maxBytes: number): Promise<unknown> {
  const res = await request(url, {
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    headers: { accept: 'application/json' },
  });
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new Error(`${url} answered ${res.statusCode}`);
  }
  const text = await res.body.text();
  if (text.length > maxBytes) throw new Error(`${url}: the document is too large`);
  return JSON.parse(text);
}
