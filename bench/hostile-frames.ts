/** Frames a hostile peer sends (bench hostile, test/transport/hostile.test.ts). */
import { encodeMessage, frameBytes, PROTOCOL_VERSION } from '../src/transport/index.js';

/** A framed Request of `n` empty work requests (2 bytes each): the stalling frame at n = 8 Mi. */
export function emptyWrsFrame(n: number): Uint8Array {
  const body = new Uint8Array(2 * n);
  for (let i = 0; i < n; i++) body[2 * i] = 0x1a;
  const head: number[] = [0x0a];
  for (let l = body.length; ; l = Math.floor(l / 128)) {
    if (l < 128) {
      head.push(l);
      break;
    }
    head.push((l & 127) | 128);
  }
  const frame = new Uint8Array(head.length + body.length);
  frame.set(head);
  frame.set(body, head.length);
  return frameBytes(frame);
}

/** A framed Hello with `authToken` and an application payload. */
export const helloFrame = (authToken: string, payload: Uint8Array): Uint8Array => frameBytes(encodeMessage({ type: 'hello', version: PROTOCOL_VERSION, authToken, clientName: 'hostile', maxFrameBytes: 16 << 20, payload }));
