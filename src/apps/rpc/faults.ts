/**
 * The durable RPC app's mutants (DESIGN §8 "the suite must have teeth"): each removes one
 * persistence or validation step through a test-only fault switch — of recovery/ (RecoveryFaults)
 * or of the RPC layer (RpcFaults, src/rpc) — and lists the strategies under which `pmrpc
 * crash-test` must report violations with it. `pmrpc crash-test --app rpc --list-mutants` prints
 * RPC_MUTANTS; test/crash/mutants.test.ts holds every listed pair to that. (Until the apps took one
 * shape this list was src/testing/crash's `MUTANTS`, a name pmrpc/testing still exports.)
 */
import type { RecoveryFaults } from '../../../recovery/index.js';
import type { RpcFaults, RpcStrategy } from '../../rpc/index.js';

export interface RpcMutant {
  /** [a-z][a-z0-9-]* */
  name: string;
  /** The step removed. */
  step: string;
  /** Strategies under which the crash test must catch it. */
  strategies: readonly RpcStrategy[];
  recoveryFaults?: RecoveryFaults;
  rpcFaults?: RpcFaults;
  /**
   * Why the step, though kept, cannot show in this app's workload (an equivalent mutant here; the
   * mutants test then holds that it is NOT caught, so a change that makes it matter again shows).
   */
  equivalent?: string;
}

const DURABLE: readonly RpcStrategy[] = ['wflush', 'sflush', 'wrflush', 'srflush', 'gpspm', 'farm', 'darpc'];

export const RPC_MUTANTS: readonly RpcMutant[] = Object.freeze([
  { name: 'skip-flush', step: 'the client FLUSH(persistent) after the request (wflush, sflush): durable at the message completion', strategies: ['wflush', 'sflush'], rpcFaults: { skipFlush: true } },
  { name: 'flush-global', step: 'persistence of the FLUSH: FLUSH(global) instead of FLUSH(persistent) (lands in CPU caches under DDIO)', strategies: ['wflush', 'sflush'], rpcFaults: { flushGlobal: true } },
  { name: 'skip-receiver-persist', step: 'the server CPU persist of the entry before its ACK (wrflush, srflush, gpspm)', strategies: ['wrflush', 'srflush', 'gpspm'], rpcFaults: { skipReceiverPersist: true } },
  { name: 'ack-before-persist', step: 'the order ACK after persist: the server ACKs, then persists the entry', strategies: ['wrflush', 'srflush', 'gpspm'], rpcFaults: { ackBeforePersist: true } },
  { name: 'reply-before-apply', step: 'the coupled baselines reply only after the effects are committed (farm, darpc)', strategies: ['farm', 'darpc'], rpcFaults: { replyBeforeApply: true } },
  { name: 'early-credit', step: 'credits return only after the request is applied (its record synced, at the ack gate): one slot early lets a client overwrite an entry not yet applied', strategies: DURABLE, rpcFaults: { earlyCredit: true } },
  { name: 'skip-record-persist', step: 'redo log: persist the record before applying its after-images', strategies: DURABLE, recoveryFaults: { skipPersistRecordBeforeApply: true } },
  { name: 'skip-apply-persist', step: 'redo log: persist the after-images before setting the applied flag', strategies: DURABLE, recoveryFaults: { skipPersistApplyBeforeFlag: true } },
  {
    name: 'skip-flag-persist',
    step: 'redo log: persist the applied flag (lazily, with the next batch)',
    strategies: [],
    recoveryFaults: { skipPersistAppliedFlag: true },
    equivalent: 'since lazy flags (docs/recovery.md, "Group commit") recovery replays every complete record, even behind the table word, so a lost flag loses no request; it breaks releases (recovery refuses an unapplied record of a released client), which this workload does not do: the recovery app catches it (test/recovery/faults.test.ts)',
  },
  { name: 'skip-credit-persist', step: 'redo log: make the applied sequence durable before a record slot is reused', strategies: DURABLE, recoveryFaults: { skipPersistCreditBeforeReuse: true } },
  { name: 'skip-checksum-recovery', step: 'recovery: verify entry and record checksums (torn entries and records)', strategies: DURABLE, recoveryFaults: { skipChecksumAtRecovery: true } },
  { name: 'ack-before-persist-in-pump', step: 'the order ACK after persist of the ACK sent at a NIC run\'s end (before processing, with the run\'s responses): the server ACKs, then persists the entry', strategies: ['wrflush', 'srflush'], rpcFaults: { ackBeforePersistInPump: true } },
] satisfies RpcMutant[]);

/** The mutant called `name` (TypeError naming the list otherwise). */
export function findRpcMutant(name: string): RpcMutant {
  const m = RPC_MUTANTS.find((x) => x.name === name);
  if (m === undefined) throw new TypeError(`unknown mutant ${name}; one of ${RPC_MUTANTS.map((x) => x.name).join(', ')}`);
  return m;
}
