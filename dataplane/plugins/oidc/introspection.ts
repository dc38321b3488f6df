/**
 * RFC 7662 token introspection: the token POSTed to the provider's endpoint with the gateway's
 * client credentials (client_secret_basic, each part form-encoded first as RFC 6749 §2.3.1
 * says). Any failure to get a JSON answer throws: the caller fails closed.
 */
import { request } from 'undici';
import { endAttemptSpan, type Span, startFetchSpan } from '../../observability/tracing.ts';

export interface IntrospectionClient {
  clientId: string;
  secret: string;
  timeoutMs: number;
}

/** `parent`: the server span of the request whose token it is (tracing on): the call is its child span. */
export const introspect = (
  endpoint: string,
  client: IntrospectionClient,
  token: string,
  parent: Span | null = null,
) => postForm(endpoint, client, { token, token_type_hint: 'access_token' }, parent, 'oidc introspection');

/**
 * A form POSTed to a provider endpoint as the client (introspection, the token endpoint): its
 * JSON object answer. Always for a request waiting on it: with tracing on, a child span of its
 * server span (`parent`), named `spanName`.
 */
export async function postForm(
  endpoint: string,
  client: IntrospectionClient,
  form: Record<string, string>,
  parent: Span | null,
  spanName: string,
): Promise<Record<string, unknown>> {
  const basic = Buffer.from(
    `${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.secret)}`,
  ).toString('base64');
  const headers: Record<string, string> = {
    authorization: `Basic ${basic}`,
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json',
  };
  const span = parent === null ? null : startFetchSpan(parent, spanName, 'POST', endpoint, headers);
  let status = 0;
  try {
    const res = await request(endpoint, {
      method: 'POST',
      headersTimeout: client.timeoutMs,
      bodyTimeout: client.timeoutMs,
      headers,
      body: new URLSearchParams(form).toString(),
    });
    status = res.statusCode;
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new Error(`${endpoint} answered ${res.statusCode}`);
    }
    const text = await res.body.text();
    if (text.length > 64 * 1024) throw new Error('the answer is too large');
    const answer = JSON.parse(text) as unknown;
    if (answer === null || typeof answer !== 'object' || Array.isArray(answer))
      throw new Error('the answer is not a JSON object');
    if (span !== null) endAttemptSpan(span, status, null);
    return answer as Record<string, unknown>;
  } catch (err) {
    if (span !== null) endAttemptSpan(span, status, err as Error);
    throw err;
  }
}
