/**
 * The results history: a SQLite file (better-sqlite3) with one row per run and one per run × cell,
 * so that runs can be compared over time (`pmrpc bench history`).
 */
import { execFileSync } from 'node:child_process';
import { openDatabase } from './sqlite.js';
import type { BenchReport } from './types.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  suite TEXT NOT NULL,
  started_at TEXT NOT NULL,
  git_commit TEXT NOT NULL,
  node_version TEXT NOT NULL,
  machine TEXT NOT NULL,
  seed INTEGER NOT NULL,
  quick INTEGER NOT NULL,
  command TEXT NOT NULL,
  config TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cells (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  idx INTEGER NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (run_id, idx)
);
CREATE TABLE IF NOT EXISTS ratios (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  name TEXT NOT NULL,
  value REAL NOT NULL,
  PRIMARY KEY (run_id, name)
);
`;

export interface RunMeta {
  startedAt: string;
  seed: number;
  quick: boolean;
  command: string;
}

export function gitCommit(cwd = process.cwd()): string {
  try {
    return execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd, stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  } catch {
    return 'unknown';
  }
}

/** Appends a run and its cells and ratios; returns the run id. */
export function recordRun(dbPath: string, report: BenchReport, meta: RunMeta): number {
  const db = openDatabase(dbPath);
  try {
    db.pragma('journal_mode = WAL');
    db.exec(SCHEMA);
    const insertRun = db.prepare(
      'INSERT INTO runs (suite, started_at, git_commit, node_version, machine, seed, quick, command, config) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const insertCell = db.prepare('INSERT INTO cells (run_id, idx, data) VALUES (?, ?, ?)');
    const insertRatio = db.prepare('INSERT INTO ratios (run_id, name, value) VALUES (?, ?, ?)');
    return db.transaction(() => {
      const machine = (report.config.machine as Record<string, unknown> | undefined) ?? {};
      const id = Number(
        insertRun.run(report.suite, meta.startedAt, gitCommit(), process.version, JSON.stringify(machine), meta.seed, meta.quick ? 1 : 0, meta.command, JSON.stringify(report.config)).lastInsertRowid,
      );
      report.rows.forEach((row, i) => insertCell.run(id, i, JSON.stringify(row)));
      for (const [name, value] of Object.entries(report.ratios)) if (Number.isFinite(value)) insertRatio.run(id, name, value);
      return id;
    })();
  } finally {
    db.close();
  }
}

export interface HistoryRun {
  id: number;
  suite: string;
  startedAt: string;
  gitCommit: string;
  nodeVersion: string;
  seed: number;
  quick: boolean;
  command: string;
  cells: number;
  ratios: Record<string, number>;
}

/** The most recent runs, newest first. */
export function readHistory(dbPath: string, options: { suite?: string; limit?: number } = {}): HistoryRun[] {
  const db = openDatabase(dbPath, { readonly: true, fileMustExist: true });
  try {
    const runs = db
      .prepare(
        `SELECT r.id, r.suite, r.started_at AS startedAt, r.git_commit AS gitCommit, r.node_version AS nodeVersion, r.seed, r.quick, r.command,
                (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.id) AS cells
         FROM runs r WHERE (? IS NULL OR r.suite = ?) ORDER BY r.id DESC LIMIT ?`,
      )
      .all(options.suite ?? null, options.suite ?? null, options.limit ?? 20) as Array<Omit<HistoryRun, 'ratios' | 'quick'> & { quick: number }>;
    const ratios = db.prepare('SELECT name, value FROM ratios WHERE run_id = ? ORDER BY name');
    return runs.map((r) => ({
      ...r,
      quick: r.quick === 1,
      ratios: Object.fromEntries((ratios.all(r.id) as Array<{ name: string; value: number }>).map((x) => [x.name, x.value])),
    }));
  } finally {
    db.close();
  }
}
