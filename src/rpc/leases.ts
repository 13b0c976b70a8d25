/**
 * Leases of the durable RPC server's clients (DESIGN §4): when each client in the table last showed
 * a sign of life (a connect, a request processed; a restart counts for every client), which leases
 * have expired, and whether the grace after a restart is over. DurableRpcServer (server.ts) decides
 * what to release; this only keeps time, from the injected clock (DESIGN §7).
 */
import type { Clock } from '../../pmem/index.js';

export class Leases {
  /** When each client in the table last showed a sign of life (clock ms). */
  readonly #lastSeen = new Map<number, number>();
  /** When the recovered store's clients became dormant (start() after a restart). */
  #restartedAt = 0;
  readonly #clock: Clock;
  readonly #leaseMs: number;
  readonly #restartGraceMs: number;

  constructor(clock: Clock, leaseMs: number, restartGraceMs: number) {
    this.#clock = clock;
    this.#leaseMs = leaseMs;
    this.#restartGraceMs = restartGraceMs;
  }

  /** The server starts serving: a sign of life for every client in the table (`restarted`: after a recovery). */
  started(clientIds: readonly number[], restarted: boolean): void {
    const now = this.#clock.nowMs();
    for (const id of clientIds) this.#lastSeen.set(id, now);
    if (restarted) this.#restartedAt = now;
  }

  /** A sign of life of one client. */
  seen(clientId: number): void {
    this.#lastSeen.set(clientId, this.#clock.nowMs());
  }

  /** The client's slot was released. */
  forget(clientId: number): void {
    this.#lastSeen.delete(clientId);
  }

  /** Of the clients in the table, those whose lease has expired, the longest silent first. */
  expired(clientIds: readonly number[]): number[] {
    const now = this.#clock.nowMs();
    const lease = this.#leaseMs;
    return clientIds
      .map((id) => ({ id, seen: this.#lastSeen.get(id) ?? Number.NEGATIVE_INFINITY }))
      .filter((x) => now - x.seen >= lease)
      .sort((a, b) => a.seen - b.seen)
      .map((x) => x.id);
  }

  /** restartGraceMs have passed since the restart: a pre-crash client not back counts as expired when a slot is needed. */
  graceOver(): boolean {
    return this.#clock.nowMs() - this.#restartedAt >= this.#restartGraceMs;
  }
}
