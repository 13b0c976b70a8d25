/**
 * The resolver agent (docs/tx.md, "Who resolves"): what a shard runs beside its clients — at start
 * (a restarted shard resolves what its crash left in doubt) and then one pass per lease: a
 * transaction found in doubt (a lock, or a PREPARED record) in two passes in a row is one whose
 * client did not finish it within a lease, and the agent resolves it (TxResolver, rows D1–D8).
 * The lease only decides *when* a transaction is resolved; two resolvers (the agent of every
 * participant, and the client itself) racing reach the same decision, so safety never depends on
 * it. The crash explorer's agent (src/testing/crash/tx.ts) and a node's (src/cluster/tx.ts) are
 * this one class.
 */
import type { Clock } from '../../../pmem/index.js';
import { TxResolver, type Resolution, type ShardSource } from './client.js';
import type { TxFaults } from './faults.js';

export interface TxAgentOptions {
  clock: Clock;
  faults?: Partial<TxFaults>;
  /** Resolve only transactions that touch this shard (a node's agent: what it participates in); undefined: all. */
  shard?: number;
}

export class TxAgent {
  readonly resolver: TxResolver;
  readonly #shard: number | undefined;
  #prev = new Set<bigint>();
  /** Passes made, and transactions resolved by outcome. */
  readonly stats = { passes: 0, resolved: 0, committed: 0, aborted: 0, finished: 0, unknown: 0 };

  constructor(source: ShardSource, options: TxAgentOptions) {
    this.resolver = new TxResolver(source, { clock: options.clock, faults: options.faults });
    this.#shard = options.shard;
  }

  #mine(mask: bigint | undefined): boolean {
    return this.#shard === undefined || mask === undefined || ((mask >> BigInt(this.#shard)) & 1n) === 1n;
  }

  #count(r: Resolution): void {
    this.stats.resolved++;
    this.stats[r]++;
  }

  /** One lease pass: scan; resolve what was in doubt in the previous pass too. Returns what is in doubt now. */
  async pass(): Promise<bigint[]> {
    this.stats.passes++;
    const { inDoubt, hints } = await this.resolver.scan();
    const mine = inDoubt.filter((t) => this.#mine(hints.get(t)));
    const twice = mine.filter((t) => this.#prev.has(t));
    this.#prev = new Set(mine);
    for (const t of twice) this.#count(await this.resolver.resolve(t, hints.get(t)));
    return mine;
  }

  /** Resolves everything in doubt now (a restart: no lease to wait for — the crash ended every transaction this shard was in). */
  async resolveAll(passesMax = 8): Promise<{ passes: number; left: bigint[] }> {
    const st = this.resolver.stats;
    const before = { committed: st.committed, aborted: st.aborted, finished: st.finished };
    const r = await this.resolver.resolveAll(passesMax, (_t, mask) => this.#mine(mask));
    for (const k of ['committed', 'aborted', 'finished'] as const) {
      this.stats[k] += st[k] - before[k];
      this.stats.resolved += st[k] - before[k];
    }
    return r;
  }
}
