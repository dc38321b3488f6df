/**
 * The frame-header reader on frames made by the ws library's own Sender (masked as a client
 * sends them, unmasked as a server does), whole and cut at every byte; the Close frames the
 * gateway writes, decoded by ws's Receiver.
 */
import { describe, expect, it } from 'vitest';
import * as ws from 'ws';
import { CLOSE_TOO_BIG, closeFrame, FrameReader } from '../../dataplane/handlers/proxy/ws-frames.ts';

type FrameOptions = { fin: boolean; opcode: number; mask: boolean; readOnly: boolean };
// @types/ws does not declare Sender and Receiver; ws exports them (ws/wrapper.mjs).
const { Sender, Receiver } = ws as unknown as {
  Sender: { frame(data: Buffer, o: FrameOptions): Buffer[] };
  Receiver: new (o: {
    isServer: boolean;
  }) => NodeJS.WritableStream & {
    on(e: 'conclude', f: (code: number, reason: Buffer) => void): void;
  };
};

const TEXT = 1;
const BINARY = 2;
const CONT = 0;
const CLOSE = 8;
const PING = 9;

function frame(opcode: number, size: number, o: { fin?: boolean; mask?: boolean } = {}): Buffer {
  const data = Buffer.alloc(size, 0x61);
  return Buffer.concat(
    Sender.frame(data, { fin: o.fin ?? true, opcode, mask: o.mask ?? true, readOnly: false }),
  );
}

/** Feeds the bytes whole, then again cut into pieces of `step`: the same result both ways. */
function read(bytes: Buffer, max: number, step = bytes.length) {
  let messages = 0;
  const reader = new FrameReader(max, () => messages++);
  let stoppedAt = -1;
  for (let at = 0; at < bytes.length; at += step) {
    const r = reader.feed(bytes.subarray(at, at + step));
    if (r >= 0) {
      stoppedAt = at + r;
      break;
    }
  }
  return { messages, stoppedAt, reader };
}

describe('FrameReader', () => {
  it('counts messages of every length encoding (7-bit, 16-bit, 64-bit), masked and not, whole or cut at every byte', () => {
    const bytes = Buffer.concat([
      frame(TEXT, 5),
      frame(BINARY, 125),
      frame(TEXT, 126, { mask: false }),
      frame(BINARY, 65_535),
      frame(BINARY, 65_536, { mask: false }),
      frame(TEXT, 0),
    ]);
    for (const step of [bytes.length, 1, 3, 7, 1000]) {
      const r = read(bytes, 0, step);
      expect({ step, messages: r.messages, stoppedAt: r.stoppedAt }).toEqual({
        step,
        messages: 6,
        stoppedAt: -1,
      });
      expect(r.reader.atBoundary).toBe(true);
    }
  });

  it('a message at the limit passes; one byte over stops at the start of its frame', () => {
    const ok = frame(TEXT, 1024);
    expect(read(ok, 1024).stoppedAt).toBe(-1);
    const over = Buffer.concat([ok, frame(BINARY, 1025)]);
    const r = read(over, 1024);
    expect(r.stoppedAt).toBe(ok.length);
    expect(r.reader.violation).toBe('too_big');
    expect(r.messages).toBe(1);
    expect(r.reader.atBoundary).toBe(true);
  });

  it('sums a fragmented message over its continuation frames; pings in between are not counted', () => {
    const first = frame(TEXT, 600, { fin: false });
    const ping = frame(PING, 100);
    const last = frame(CONT, 424);
    expect(read(Buffer.concat([first, ping, last]), 1024)).toMatchObject({ messages: 1, stoppedAt: -1 });
    const tooMuch = frame(CONT, 425);
    const r = read(Buffer.concat([first, ping, tooMuch]), 1024);
    expect(r.stoppedAt).toBe(first.length + ping.length);
    expect(r.reader.violation).toBe('too_big');
    expect(r.messages).toBe(0);
  });

  it('a 64-bit length over the limit is refused from its header alone', () => {
    const header = frame(BINARY, 70_000).subarray(0, 14);
    const r = read(header, 65_536);
    expect(r.stoppedAt).toBe(0);
    expect(r.reader.violation).toBe('too_big');
  });

  it('a violation whose header began in an earlier chunk is not on a boundary (the side must be cut, not closed)', () => {
    const bytes = Buffer.concat([frame(TEXT, 10), frame(BINARY, 2000)]);
    const r = read(bytes, 1024, 17); // the second header starts at 16: its first byte goes in the first chunk
    expect(r.reader.violation).toBe('too_big');
    expect(r.stoppedAt).toBe(17);
    expect(r.reader.atBoundary).toBe(false);
  });

  it('sees a Close frame', () => {
    const r = read(Buffer.concat([frame(TEXT, 3), closeFrame(1000, Buffer.from([1, 2, 3, 4]))]), 0);
    expect(r.reader.closeSeen).toBe(true);
    expect(r.messages).toBe(1);
  });

  it.each([
    ['a continuation with no message started', frame(CONT, 3)],
    [
      'a new message inside a fragmented one',
      Buffer.concat([frame(TEXT, 3, { fin: false }), frame(TEXT, 3)]),
    ],
    ['a reserved opcode', frame(3, 3)],
    ['a control frame over 125 bytes', frame(PING, 126)],
    ['a fragmented control frame', frame(PING, 3, { fin: false })],
    ['a 64-bit length with its top bit set', Buffer.from([0x82, 0x7f, 0x80, 0, 0, 0, 0, 0, 0, 1])],
  ])('refuses %s as a protocol error', (_name, bytes) => {
    const r = read(bytes, 0);
    expect(r.stoppedAt).toBeGreaterThanOrEqual(0);
    expect(r.reader.violation).toBe('protocol');
  });
});

describe('closeFrame', () => {
  it.each([
    ['to a client (unmasked)', undefined, false],
    ['to a server (masked)', Buffer.from([0x12, 0x34, 0x56, 0x78]), true],
  ])('%s decodes with ws as a Close with its code', async (_name, maskKey, isServer) => {
    const receiver = new Receiver({ isServer });
    const concluded = new Promise<number>((resolve) => receiver.on('conclude', (code) => resolve(code)));
    receiver.write(closeFrame(CLOSE_TOO_BIG, maskKey));
    expect(await concluded).toBe(1009);
    expect(read(closeFrame(CLOSE_TOO_BIG, maskKey), 0).reader.closeSeen).toBe(true);
  });

  it('is one Close frame (opcode 8, FIN)', () => {
    expect(closeFrame(1001)[0]).toBe(0x80 | CLOSE);
  });
});
