/**
 * What a Node user would use instead of pmrpc for durable requests: better-sqlite3 with WAL and
 * `synchronous = FULL` (an fsync of the WAL at every commit), in the same process, file in the OS
 * temporary directory (the same file system as pmrpc's `strict` region in the same run).
 *
 * A request = insert its payload (the durable write) + update a digest row (its effect), like the
 * bench handler's effect. Modes:
 * - `txn`: one transaction per request (a client with one outstanding request);
 * - `group`: group commit — `groupSize` requests per transaction (a client with `groupSize`
 *   outstanding requests: each waits for the batch's commit, so its latency is the batch's);
 * - `txn-sync-off`: one transaction per request with `synchronous = OFF` — durable against a crash
 *   of the process only (the page cache keeps the file), like pmrpc without `strict`.
 */
import * as hdr from 'hdr-histogram-js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchClock, CellPlan } from './flush-cell.js';
import { makePayload, spin } from './flush-handlers.js';
import { openDatabase } from './sqlite.js';

export type SqliteMode = 'txn' | 'group' | 'txn-sync-off';

export interface SqliteResult {
  mode: SqliteMode;
  payloadBytes: number;
  groupSize: number;
  throughputPerSecond: number;
  p50Ns: number;
  p99Ns: number;
  requests: number;
  dir: string;
}

export function runSqlite(mode: SqliteMode, payloadBytes: number, groupSize: number, plan: CellPlan, clock: BenchClock): SqliteResult {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-bench-sqlite-'));
  const db = openDatabase(join(dir, 'requests.db'));
  const h = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: 3 });
  try {
    db.pragma('journal_mode = WAL');
    db.pragma(mode === 'txn-sync-off' ? 'synchronous = OFF' : 'synchronous = FULL');
    db.exec('CREATE TABLE requests (seq INTEGER PRIMARY KEY, payload BLOB NOT NULL); CREATE TABLE state (slot INTEGER PRIMARY KEY, digest INTEGER NOT NULL);');
    const insert = db.prepare('INSERT INTO requests (seq, payload) VALUES (?, ?)');
    const effect = db.prepare('INSERT INTO state (slot, digest) VALUES (?, ?) ON CONFLICT(slot) DO UPDATE SET digest = excluded.digest');
    const payload = makePayload(payloadBytes, 0, 7);
    const n = mode === 'group' ? groupSize : 1;
    let seq = 0;
    const batch = db.transaction((k: number) => {
      for (let i = 0; i < k; i++) {
        seq++;
        insert.run(seq, payload);
        effect.run(seq % 32, spin(payload, 0, seq));
      }
    });
    const tStart = clock.nowNs() + plan.warmupMs * 1e6;
    const tEnd = tStart + plan.measureMs * 1e6;
    let inWindow = 0;
    for (;;) {
      const t0 = clock.nowNs();
      if (t0 >= tEnd) break;
      batch(n);
      const t1 = clock.nowNs();
      if (t0 >= tStart) {
        inWindow += n;
        h.recordValueWithCount(Math.max(1, Math.round(t1 - t0)), n);
      }
    }
    return {
      mode, payloadBytes, groupSize: n,
      throughputPerSecond: (inWindow * 1000) / plan.measureMs,
      p50Ns: h.totalCount > 0 ? h.getValueAtPercentile(50) : 0,
      p99Ns: h.totalCount > 0 ? h.getValueAtPercentile(99) : 0,
      requests: seq,
      dir: tmpdir(),
    };
  } finally {
    h.destroy();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
