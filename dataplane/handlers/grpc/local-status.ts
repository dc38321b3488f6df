/**
 * Statuses @grpc/grpc-js makes itself, told from those the service sent. grpc-js does not mark
 * them: a status from the service's trailers and one the library made (a reply over the receive
 * limit, a stream reset, an answer that is not gRPC) reach the caller as the same
 * {code, details, metadata}. The library's detail texts are its markers: each site that makes a
 * status writes a fixed form (grpc-js 1.14: stream-decoder, compression-filter,
 * subchannel-call, client, client-interceptors). A local status always carries empty metadata
 * (`new Metadata()`), so a service whose trailers-only answer quotes one of those texts is still
 * read as the service's. CANCELLED, DEADLINE_EXCEEDED and UNAVAILABLE are not here: the
 * library makes them too, and they keep their mapping (499, 504, 503) with the gateway's words
 * (answer.ts). A test provokes each kind through a real server (test/grpc/local-status.test.ts),
 * so a grpc-js upgrade that rewords one fails there.
 */
import type { StatusObject } from '@grpc/grpc-js';

/** [the library's detail text, what the gateway says instead]. */
const LOCAL: readonly (readonly [RegExp, string])[] = [
  [
    /^Received message (?:larger than max \(\d+ vs\.? \d+\)|that decompresses to a size larger than \d+)$/,
    "the gRPC service's reply is larger than the gateway accepts",
  ],
  [
    /^(?:Failed to decompress \w+-encoded message|Received compressed message but "grpc-encoding" header was identity|Compression method not supported: .*|Response message parsing error: .*)$/s,
    "the gRPC service's reply could not be read",
  ],
  [/^Received HTTP status code \d+$/, 'the service did not answer with gRPC'],
  [
    /^(?:Received RST_STREAM with code \d+.*|No status information received|Too many responses received|No message received|Bandwidth exhausted or memory limit exceeded|Protocol not secure enough)$/s,
    'the gRPC service broke off the call or answered outside the gRPC protocol',
  ],
  [
    /^(?:Request message serialization failure: .*|Attempted to send message with a size larger than \d+|Write error: .*|Write failed with error .*)$/s,
    'the gateway could not send the gRPC request',
  ],
];

/** The gateway's words for a status grpc-js made itself, or null: the service sent it. */
export function localFailure(s: StatusObject): string | null {
  // A rejection that was not a status (a bare Error) reaches the call with neither field.
  if (typeof s.details !== 'string' || !Number.isInteger(s.code))
    return 'the gRPC call failed in the gateway';
  if (s.metadata !== undefined && s.metadata !== null && Object.keys(s.metadata.getMap()).length > 0)
    return null;
  for (const [text, words] of LOCAL) if (text.test(s.details)) return words;
  return null;
}
