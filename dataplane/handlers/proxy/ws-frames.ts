/**
 * A WebSocket frame-header reader (RFC 6455 §5.2) for one direction of a relayed connection: it
 * is fed the bytes as they pass and reads only the headers (FIN, opcode, mask bit, 7/16/64-bit
 * payload length), skipping payloads by count. Nothing is buffered or re-framed: the relay
 * forwards the very chunks it was given, so the cost per chunk is a few comparisons, and a
 * message's size is the sum of its frames' payload lengths (a data frame, then its continuation
 * frames), known from each header before its payload passes.
 *
 * Sizes are wire sizes: with permessage-deflate negotiated they are the compressed sizes (the
 * gateway does not inflate; each endpoint bounds what it inflates).
 */

/** Why a direction must stop: a message over the limit, or bytes that are not WebSocket frames. */
export type FrameViolation = 'too_big' | 'protocol';

const OP_CONTINUATION = 0;
const OP_TEXT = 1;
const OP_BINARY = 2;
const OP_CLOSE = 8;
const OP_PONG = 10;

export class FrameReader {
  /** Set when feed() stopped: why. */
  violation: FrameViolation | null = null;
  /** A Close frame has passed in this direction. */
  closeSeen = false;
  readonly #maxMessageBytes: number;
  readonly #onMessage: () => void;
  /** The header being read (at most 14 bytes: 2 + 8 of length + 4 of mask key). */
  readonly #header = Buffer.alloc(14);
  #have = 0;
  #need = 2;
  /** Payload bytes of the current frame still to pass. */
  #payloadLeft = 0;
  /** Inside a fragmented data message (a data frame without FIN was read). */
  #inMessage = false;
  #messageBytes = 0;
  /** Stopped with part of the offending frame's header already forwarded (it began in an earlier chunk). */
  #stoppedMidHeader = false;

  /** maxMessageBytes 0: no limit. onMessage runs once per complete data message (at its last frame's header). */
  constructor(maxMessageBytes: number, onMessage: () => void) {
    this.#maxMessageBytes = maxMessageBytes;
    this.#onMessage = onMessage;
  }

  /**
   * Reads the headers in `chunk`. Returns -1 when the whole chunk may be forwarded; otherwise the
   * offset where forwarding must stop (the start of the offending frame, or 0 when its header
   * began in an earlier chunk: see atBoundary), with `violation` set.
   */
  feed(chunk: Buffer): number {
    const len = chunk.length;
    let i = 0;
    while (i < len) {
      if (this.#payloadLeft > 0) {
        const n = Math.min(this.#payloadLeft, len - i);
        this.#payloadLeft -= n;
        i += n;
        continue;
      }
      const start = i - this.#have;
      while (i < len && this.#have < this.#need) {
        this.#header[this.#have++] = chunk[i++];
        if (this.#have === 2) this.#need = headerLength(this.#header[1]);
      }
      if (this.#have < this.#need) break;
      this.#have = 0;
      this.#need = 2;
      this.violation = this.#frame();
      if (this.violation !== null) {
        this.#stoppedMidHeader = start < 0;
        return Math.max(start, 0);
      }
    }
    return -1;
  }

  /** Between frames: what was forwarded in this direction ends on a frame boundary, so a Close frame may follow it. */
  get atBoundary(): boolean {
    return this.#payloadLeft === 0 && this.#have === 0 && !this.#stoppedMidHeader;
  }

  /** Checks the header just read and sets up its payload; returns a violation or null. */
  #frame(): FrameViolation | null {
    const h = this.#header;
    const fin = (h[0] & 0x80) !== 0;
    const opcode = h[0] & 0x0f;
    const len7 = h[1] & 0x7f;
    let length = len7;
    if (len7 === 126) length = h.readUInt16BE(2);
    else if (len7 === 127) {
      const high = h.readUInt32BE(2);
      if (high & 0x80000000) return 'protocol';
      length = high * 2 ** 32 + h.readUInt32BE(6);
    }
    if (opcode >= OP_CLOSE) {
      if (opcode > OP_PONG || !fin || length > 125) return 'protocol';
      if (opcode === OP_CLOSE) this.closeSeen = true;
    } else if (opcode === OP_TEXT || opcode === OP_BINARY) {
      if (this.#inMessage) return 'protocol';
      this.#messageBytes = length;
    } else if (opcode === OP_CONTINUATION) {
      if (!this.#inMessage) return 'protocol';
      this.#messageBytes += length;
    } else return 'protocol';
    if (opcode < OP_CLOSE) {
      if (this.#maxMessageBytes > 0 && this.#messageBytes > this.#maxMessageBytes) return 'too_big';
      this.#inMessage = !fin;
      if (fin) this.#onMessage();
    }
    this.#payloadLeft = length;
    return null;
  }
}

/** The header's length from its second byte: 2, plus 2 or 8 bytes of extended length, plus 4 of mask key. */
function headerLength(b1: number): number {
  const len7 = b1 & 0x7f;
  return 2 + (len7 === 126 ? 2 : len7 === 127 ? 8 : 0) + (b1 & 0x80 ? 4 : 0);
}

/** Close status codes the gateway sends (RFC 6455 §7.4.1). */
export const CLOSE_GOING_AWAY = 1001;
export const CLOSE_PROTOCOL_ERROR = 1002;
export const CLOSE_TOO_BIG = 1009;
/** The upstream failed or sent what is not WebSocket (1014 Bad Gateway, IANA registry). */
export const CLOSE_BAD_GATEWAY = 1014;

/**
 * A Close frame with a status code and no reason. Frames towards a server must be masked
 * (§5.3): `maskKey` is then given (4 random bytes) and the code is sent masked with it.
 */
export function closeFrame(code: number, maskKey?: Buffer): Buffer {
  if (maskKey === undefined) return Buffer.from([0x80 | OP_CLOSE, 2, code >> 8, code & 0xff]);
  const frame = Buffer.from([0x80 | OP_CLOSE, 0x80 | 2, ...maskKey, code >> 8, code & 0xff]);
  frame[6] ^= maskKey[0];
  frame[7] ^= maskKey[1];
  return frame;
}
