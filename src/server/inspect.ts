/**
 * `pmrpc inspect`: what a PM file holds — region header, recovery layout, connection table, rings
 * (entries durable but not yet processed), redo log — and what recovery would do with it (a dry
 * run on a copy). Read-only: the file is validated, copied into memory and never written.
 */
import { readFileSync } from 'node:fs';
import { PmemRegion, PmrpcError } from '../../pmem/index.js';
import { entryOffset, inspectSlot, RECOVERY_LAYOUT_VERSION, RecoveryStore, type RecordState } from '../../recovery/index.js';

export interface InspectReport {
  file: string;
  header: { uuid: string; sizeBytes: number };
  layout: {
    version: number;
    epoch: number;
    nextClientId: number;
    maxClients: number;
    ringSlots: number;
    slotBytes: number;
    logRecords: number;
    recordBytes: number;
    appOffset: number;
    appBytes: number;
  };
  connections: Array<{
    clientId: number;
    connSlot: number;
    /** The table's applied word (made durable lazily; the redo log's flags are the truth). */
    tableAppliedSeq: number;
    /** Highest sequence of this client with a durable applied record in the log. */
    logAppliedSeq: number;
    ring: { offset: number; head: number; tail: number; durableUnprocessed: number };
    /** What recovery would hand this client: its resume point and the requests it would re-execute. */
    resumeSeq: number | undefined;
    reexecute: number | undefined;
  }>;
  redoLog: {
    records: Record<RecordState, number>;
    /** LSN range of complete records (applied or not). */
    lsnMin: number | undefined;
    lsnMax: number | undefined;
    completeUnapplied: number[];
  };
  /** The dry run of recovery on a copy: what it would replay, invalidate and re-execute (or why it refuses). */
  recovery: { replay: number; invalidate: number; reexecute: number; epochAfter: number; refused: { code: string; message: string } | undefined };
  /** The first word of the application area (the demo workload's digest counter). */
  appCounter: string;
}

/** Reads `path` without writing it. A foreign or damaged file throws its PmrpcError (region or layout code). */
export function inspectFile(path: string): InspectReport {
  if (typeof path !== 'string' || path.length === 0) throw new TypeError('path must be a non-empty string');
  // Validates the region header against the file (a foreign file is refused untouched) without
  // mapping or locking it: a reader never takes the owner's exclusive lock (a live node keeps it).
  PmemRegion.readHeader(path);
  const bytes = new Uint8Array(readFileSync(path));
  const region = PmemRegion.openImage(bytes);
  const store = RecoveryStore.open(region);
  const layout = store.layout;
  const g = store.geometry;
  const records = store.log.scan();
  const counts: Record<RecordState, number> = { none: 0, incomplete: 0, 'complete-unapplied': 0, applied: 0 };
  const logApplied = new Map<number, number>();
  let lsnMin: number | undefined;
  let lsnMax: number | undefined;
  const completeUnapplied: number[] = [];
  for (const r of records) {
    counts[r.state]++;
    if (r.state === 'applied' || r.state === 'complete-unapplied') {
      lsnMin = lsnMin === undefined ? r.lsn : Math.min(lsnMin, r.lsn);
      lsnMax = lsnMax === undefined ? r.lsn : Math.max(lsnMax, r.lsn);
    }
    if (r.state === 'applied') logApplied.set(r.clientId, Math.max(logApplied.get(r.clientId) ?? 0, r.seq));
    if (r.state === 'complete-unapplied') completeUnapplied.push(r.lsn);
  }
  // Dry run on a second copy.
  let dry: { replay: number; invalidate: number; reexecute: number; epochAfter: number; refused: { code: string; message: string } | undefined };
  const resume = new Map<number, { resumeSeq: number; reexecute: number }>();
  try {
    const copy = RecoveryStore.open(PmemRegion.openImage(bytes));
    const rep = copy.recover();
    for (const c of rep.clients) resume.set(c.clientId, { resumeSeq: c.resumeSeq, reexecute: c.reexecute.length });
    dry = { replay: rep.replayedLsns.length, invalidate: rep.invalidated, reexecute: rep.clients.reduce((a, c) => a + c.reexecute.length, 0), epochAfter: rep.epoch, refused: undefined };
  } catch (e) {
    if (!(e instanceof PmrpcError)) throw e;
    dry = { replay: 0, invalidate: 0, reexecute: 0, epochAfter: store.epoch, refused: { code: e.code, message: e.message } };
  }
  const connections = store.conn.entries().map((c) => {
    const applied = Math.max(c.appliedSeq, logApplied.get(c.clientId) ?? 0);
    const head = applied + 1;
    let tail = head;
    // The durable, checksummed entries past the applied ones (bounded by the ring).
    while (tail - head < g.ringSlots) {
      const ins = inspectSlot(region, entryOffset(layout, c.connSlot, tail), g, { clientId: c.clientId, seq: tail });
      if (!(ins.checksumValid && ins.lap === 'expected')) break;
      tail++;
    }
    const r = resume.get(c.clientId);
    return {
      clientId: c.clientId,
      connSlot: c.connSlot,
      tableAppliedSeq: c.appliedSeq,
      logAppliedSeq: logApplied.get(c.clientId) ?? 0,
      ring: { offset: layout.ringOffset(c.connSlot), head, tail, durableUnprocessed: tail - head },
      resumeSeq: r?.resumeSeq,
      reexecute: r?.reexecute,
    };
  });
  const report: InspectReport = {
    file: path,
    header: { uuid: region.uuid, sizeBytes: region.sizeBytes },
    layout: {
      version: RECOVERY_LAYOUT_VERSION,
      epoch: store.epoch,
      nextClientId: layout.nextClientId,
      maxClients: g.maxClients,
      ringSlots: g.ringSlots,
      slotBytes: g.slotBytes,
      logRecords: g.logRecords,
      recordBytes: g.recordBytes,
      appOffset: g.appOffset,
      appBytes: g.appBytes,
    },
    connections,
    redoLog: { records: counts, lsnMin, lsnMax, completeUnapplied },
    recovery: dry,
    appCounter: store.appView.loadU64(0).toString(),
  };
  region.close({ writeBack: false });
  return report;
}
