/**
 * The clients' one reconnect loop (PRISM-RS, PRISM-KV): `attempt` reconnects what it can and says
 * whether the client may go on; between attempts the loop pauses `retryDelayMs` on the injected
 * clock, for at most `waitMs` in all. False when the time ran out (the caller throws its coded error).
 */
import type { Clock } from '../../pmem/index.js';

export async function untilReachable(clock: Clock, waitMs: number, retryDelayMs: number, attempt: () => Promise<boolean>): Promise<boolean> {
  const t0 = clock.nowMs();
  for (;;) {
    if (await attempt()) return true;
    if (clock.nowMs() - t0 >= waitMs) return false;
    await new Promise<void>((resolve) => clock.setTimer(retryDelayMs, resolve));
  }
}
