/**
 * RFC 7662 token introspection: the token POSTed to the provider's endpoint with the gateway's
 * client credentials (client_secret_basic, each part form-encoded first as RFC 6749 §2.3.1
 * says). Any failure to get a JSON answer throws: the caller fails closed.
 */
import { request } from 'undici';

export interface IntrospectionClient {
  clientId: string;
  secret: string;
  timeoutMs: number;
}

export const introspect = (endpoint: string, client: IntrospectionClient, token: string) =>
  postForm(endpoint, client, { token, token_type_hint: 'access_token' });

/** A form POSTed to a provider endpoint as the client (introspection, the token endpoint): its JSON object answer. */
export async function postForm(
  endpoint: string,
  client: IntrospectionClient,
  form: Record<string, string>,
): Promise<Record<string, unknown>> {
  const basic = Buffer.from(
    `${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.secret)}`,
  ).toString('base64');
  const res = await request(endpoint, {
    method: 'POST',
    headersTimeout: client.timeoutMs,
    bodyTimeout: client.timeoutMs,
    headers: {
      authorization: `Basic ${basic}`,
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    },
    body: new URLSearchParams(form).toString(),
  });
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new Error(`${endpoint} answered ${res.statusCode}`);
  }
  const text = await res.body.text();
  if (text.length > 64 * 1024) throw new Error('the answer is too large');
  const answer = JSON.parse(text) as unknown;
  if (answer === null || typeof answer !== 'object' || Array.isArray(answer))
    throw new Error('the answer is not a JSON object');
  return answer as Record<string, unknown>;
}
