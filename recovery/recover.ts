/**
 * The recovery procedure (DESIGN §3). Plan first (reads only), then act:
 *  1. validate the region (superblock, connection table, log records);
 *  2. per client, walk its ring from one past the table's applied word through the decision table
 *     (decision-table.ts): applied records advance the applied sequence, complete unapplied
 *     records are replayed, durable entries of the contiguous prefix are re-executed, and every
 *     entry from the first gap on is durably invalidated; a 'refuse' row stops recovery before
 *     anything is written;
 *  3. replay complete unapplied records in LSN order; set the derived applied words (not persisted:
 *     see below);
 *     invalidate; bump the epoch;
 *  4. re-execute the durable entries past the applied ones, FIFO per client (round-robin across
 *     clients: one total order), through the redo log, with the caller's handler.
 * Every step is idempotent, so a crash during recovery is recovered by running it again.
 */
import { PmrpcError } from '../pmem/index.js';
import type { ConnTable } from './conn-table.js';
import { decide, decideBehindWord, type DecisionRow, type RecordInput } from './decision-table.js';
import type { RecoveryFaults } from './faults.js';
import { RecoveryErrorCodes, type Layout } from './layout.js';
import type { Effects, RecordInfo, RedoLog } from './redo-log.js';
import { entryOffset, inspectSlot, invalidateSlot, type RingEntry } from './ring.js';

/** Read-only view of the application area (offsets relative to it), given to handlers. */
export interface AppView {
  readonly sizeBytes: number;
  load(offset: number, len: number): Uint8Array;
  loadU32(offset: number): number;
  loadU64(offset: number): bigint;
}

/** Computes a request's effects (after-images of the application area) from the current state. */
export type Handler = (request: RingEntry, view: AppView) => Effects;

export interface ClientRecovery {
  clientId: number;
  connSlot: number;
  /** Applied sequence after replay (before re-execution). */
  appliedSeq: number;
  /** First sequence past the durable prefix: the client resends from here. */
  resumeSeq: number;
  /** Durable entries re-executed (or to re-execute, without a handler), in FIFO order. */
  reexecute: RingEntry[];
}

export interface RecoveryReport {
  /** The epoch after recovery (bumped durably). */
  epoch: number;
  /** LSNs of the records replayed. */
  replayedLsns: number[];
  clients: ClientRecovery[];
  /** How many times each decision-table row was taken. */
  rows: Record<string, number>;
  /** Slots whose commit word was durably zeroed. */
  invalidated: number;
  /** Whether the re-executions were run (a handler was given). */
  reexecuted: boolean;
  /** Clients whose decided release recovery finished (slot-table row release-finish). */
  releasesFinished: number[];
}

interface Step {
  seq: number;
  row: DecisionRow;
  slotOffset: number;
  commitZero: boolean;
  entry: RingEntry | undefined;
  record: RecordInfo | undefined;
}

const RANK: Record<RecordInput, number> = { none: 0, incomplete: 1, 'complete-unapplied': 2, applied: 3 };

/** Recovery met a state the protocol cannot produce; nothing was written. */
export class RecoveryRefusedError extends PmrpcError {
  /** The decision-table row that refused, if a row did (else a validation of the log). */
  readonly row: string | undefined;
  /** Rows taken before the refusal (for coverage records). */
  readonly rows: Record<string, number>;
  constructor(msg: string, row: string | undefined, rows: Record<string, number>) {
    super(RecoveryErrorCodes.RECOVERY_REFUSED, msg);
    this.name = 'RecoveryRefusedError';
    this.row = row;
    this.rows = { ...rows };
  }
}

export interface RecoverParts {
  layout: Layout;
  conn: ConnTable;
  log: RedoLog;
  faults: RecoveryFaults;
  appView: AppView;
}

export function recover(parts: RecoverParts, handler?: Handler): RecoveryReport {
  const { layout, conn, log, faults } = parts;
  const g = layout.geometry;
  const rows: Record<string, number> = {};
  const refuse = (msg: string, row?: string): RecoveryRefusedError => new RecoveryRefusedError(msg, row, rows);

  // --- records: the best record per (client, seq); the flag is the truth.
  const records = log.scan();
  // The log is a prefix by LSN (docs/recovery.md, "Group commit"): records are written in LSN order
  // and a batch's records are synced before any of its flags, so a complete unapplied record past
  // an LSN that is missing (torn by a machine crash in the middle of a batch's msync) is part of a
  // torn tail: it counts as incomplete, and its request is re-executed from its ring entry instead.
  {
    const complete = new Set(records.filter((r) => r.state === 'applied' || r.state === 'complete-unapplied').map((r) => r.lsn));
    const unapplied = records.filter((r) => r.state === 'complete-unapplied').map((r) => r.lsn);
    if (unapplied.length > 0) {
      let m = Math.min(...unapplied);
      while (complete.has(m)) m++;
      for (const r of records) if (r.state === 'complete-unapplied' && r.lsn > m) r.state = 'incomplete';
    }
  }
  const byClient = new Map<number, Map<number, RecordInfo>>();
  for (const rec of records) {
    if (rec.state === 'none') continue;
    if (!conn.has(rec.clientId)) {
      if (rec.state === 'complete-unapplied') throw refuse(`log record ${rec.lsn} (unapplied) belongs to client ${rec.clientId}, which is not in the connection table`);
      continue;
    }
    let m = byClient.get(rec.clientId);
    if (m === undefined) byClient.set(rec.clientId, (m = new Map()));
    const prev = m.get(rec.seq);
    if (prev !== undefined && prev.state !== 'incomplete' && rec.state !== 'incomplete') {
      throw refuse(`client ${rec.clientId} sequence ${rec.seq} has two complete log records (${prev.lsn}, ${rec.lsn})`);
    }
    if (prev === undefined || RANK[rec.state] > RANK[prev.state]) m.set(rec.seq, rec);
  }

  // --- plan: walk each ring through the decision table. Reads only.
  const plans: { clientId: number; connSlot: number; steps: Step[]; appliedSeq: number; resumeSeq: number }[] = [];
  for (const c of conn.entries()) {
    const recs = byClient.get(c.clientId) ?? new Map<number, RecordInfo>();
    let applied = c.appliedSeq;
    let gapSeen = false;
    let resume: number | undefined;
    const steps: Step[] = [];
    // Positions (applied, applied + ringSlots]; `applied` advances on replay/skip rows, each at
    // most once per record, so the walk is bounded by ringSlots + logRecords + 1 positions.
    const bound = g.ringSlots + g.logRecords + 1;
    for (let s = c.appliedSeq + 1, n = 0; s <= applied + g.ringSlots; s++, n++) {
      if (n >= bound) throw refuse(`client ${c.clientId}: ring walk past its bound of ${bound} positions`);
      const slotOffset = entryOffset(layout, c.connSlot, s);
      const ins = inspectSlot(layout.region, slotOffset, g, { clientId: c.clientId, seq: s }, !faults.skipChecksumAtRecovery);
      const rec = recs.get(s);
      const row = decide({
        checksum: ins.checksumValid ? 'valid' : 'invalid',
        lap: ins.lap,
        seq: gapSeen ? 'pastGap' : s === applied + 1 ? 'next' : 'inPrefix',
        record: rec?.state ?? 'none',
      });
      rows[row.id] = (rows[row.id] ?? 0) + 1;
      if (row.action === 'refuse') {
        throw refuse(`client ${c.clientId} sequence ${s}: row ${row.id}: ${row.why}`, row.id);
      }
      steps.push({ seq: s, row, slotOffset, commitZero: ins.commitZero, entry: ins.entry, record: rec });
      if (row.advancesApplied) applied = s;
      if (row.gap && !gapSeen) {
        gapSeen = true;
        resume = s;
      }
    }
    plans.push({ clientId: c.clientId, connSlot: c.connSlot, steps, appliedSeq: applied, resumeSeq: resume ?? applied + g.ringSlots + 1 });
  }

  // --- act. Replays first, in one total order (LSN).
  const replays = plans.flatMap((p) => p.steps.filter((s) => s.row.action === 'replay').map((s) => s.record!));
  // Lazy flags of group commit (docs/recovery.md, "Group commit"): a batch's applied words are
  // persisted with the images of the batch before, before its own images and flags; a complete
  // unapplied record at or behind the table's word is such a request (answered: its record was
  // synced): replay it too. Every record at or behind the word is decided by BEHIND_WORD_TABLE
  // (row 'replay-behind-word': redo is idempotent, in LSN order).
  for (const c of conn.entries()) {
    for (const [seq, rec] of byClient.get(c.clientId) ?? []) {
      if (seq > c.appliedSeq || rec.state === 'none') continue;
      const row = decideBehindWord({ record: rec.state });
      rows[row.id] = (rows[row.id] ?? 0) + 1;
      if (row.action === 'replay') replays.push(rec);
    }
  }
  // A batch's flags may become durable in any order (one drain, one msync for all): a record applied
  // after an unapplied one is applied again after it, in LSN order, so that no replay of an older
  // after-image is left over a newer one (redo is idempotent: the after-images of the newest win).
  if (replays.length > 0) {
    const first = Math.min(...replays.map((r) => r.lsn));
    const again = new Set(replays.map((r) => r.lsn));
    for (const r of records) if (r.state === 'applied' && r.lsn > first && conn.has(r.clientId) && !again.has(r.lsn)) replays.push(r);
  }
  replays.sort((a, b) => a.lsn - b.lsn);
  log.applyInOrder(replays);
  // The derived applied words are set, not persisted: the applied flags they derive from stay
  // durable until their record slots are reused, and a slot is reused only after its client's
  // applied word is persisted (redo-log.ts), as a release does too — so a crash before then
  // derives the same words again. (Issue 10: no crash test could tell the persist was there; the
  // explorer found no violation without it, over the recovery and RPC apps, nested crashes and a
  // crash at every crash point of a recovery.)
  for (const p of plans) conn.setApplied(p.clientId, p.appliedSeq);
  let invalidated = 0;
  for (const p of plans) {
    for (const s of p.steps) {
      if (s.row.action !== 'invalidate' || s.commitZero) continue;
      if (faults.skipInvalidateBeyondGap && s.row.id === 'beyond-gap-entry') continue;
      invalidateSlot(layout.region, s.slotOffset);
      invalidated++;
    }
  }
  // Releases decided before the crash (slot-table row release-finish): their entries were all
  // applied before the decision, so the ring is not walked; the id word is cleared durably.
  const released = conn.releasing();
  conn.finishReleases();
  layout.setEpoch(layout.epoch + 1);

  const clients: ClientRecovery[] = plans.map((p) => ({
    clientId: p.clientId,
    connSlot: p.connSlot,
    appliedSeq: p.appliedSeq,
    resumeSeq: p.resumeSeq,
    reexecute: p.steps.filter((s) => s.row.action === 'reexecute').map((s) => s.entry!),
  }));

  // --- re-execute, FIFO per client, round-robin across clients.
  if (handler !== undefined) {
    const queues = clients.map((c) => [...c.reexecute]);
    for (let more = true; more; ) {
      more = false;
      for (const q of queues) {
        const e = q.shift();
        if (e === undefined) continue;
        more = true;
        executeEntry(parts, e, handler);
      }
    }
  }
    for (const [id, n] of Object.entries(conn.rows)) rows[id] = n;
  return { epoch: layout.epoch, replayedLsns: replays.map((r) => r.lsn), clients, rows, invalidated, reexecuted: handler !== undefined, releasesFinished: released };
}

/** Runs the handler on an entry and commits its effects through the redo log (FIFO checked). */
export function executeEntry(parts: Pick<RecoverParts, 'conn' | 'log' | 'appView'>, entry: RingEntry, handler: Handler): { lsn: number; result: Uint8Array | undefined } {
  const applied = parts.conn.appliedSeq(entry.clientId);
  if (entry.seq !== applied + 1) {
    throw new PmrpcError(RecoveryErrorCodes.OUT_OF_ORDER, `client ${entry.clientId}: sequence ${entry.seq} executed out of order (applied up to ${applied})`);
  }
  const effects = handler(entry, parts.appView);
  const { lsn } = parts.log.commit(entry.clientId, entry.seq, effects);
  return { lsn, result: effects.result };
}
