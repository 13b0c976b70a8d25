/**
 * `pmrpc inspect` and `pmrpc check` (DESIGN §6): what a PM file of any app holds, read without
 * writing it. The file is read (never mapped, never locked) into a private in-memory copy; every
 * step works on that copy, as the crash explorer works on a crash image:
 *
 *   region header → which app the area holds (src/apps identify.ts: the magic table) → the app's
 *   layout from its own header → app.open() → app.inspect() (the state as found) → app.recover()
 *   (the dry run: what a start would do) → app.inspect() and app.audit() (the explorer's audit)
 *
 * Each step that fails is recorded as a coded problem and the later ones that need it are
 * skipped, so a file whose later parts are damaged still shows its header and layout.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { cryptoEntropy, dataExtents, decodeHeader, defineErrorCodes, HEADER_BYTES, PmemRegion, PmrpcError, PmrpcIoError, readJournal, systemClock, type ErrorCodesOf } from '../../pmem/index.js';
import { Rnic } from '../../flush/index.js';
import { AREA_IDENT_BYTES, describeHolder, identifyArea, type AppProblem, type AppServer } from '../apps/index.js';
import type { RpcInspectView, RpcRecoverySummary } from '../apps/rpc/index.js';
import { findAppRecord, nodeAppFlags } from './apps.js';

export const InspectErrorCodes = defineErrorCodes('inspect', {
  /** The region holds no app's area at offset 0 (never formatted, a format cut short, or not made by pmrpc). */
  NO_APP: 'PMRPC_ERR_NO_APP',
  /** A part of the file could not be read as the app's layout (an uncoded failure while inspecting it; the message says where). */
  AREA_UNREADABLE: 'PMRPC_ERR_AREA_UNREADABLE',
  /** An invariant the app's audit (the crash explorer's) finds broken after the dry-run recovery. */
  AUDIT_FAILED: 'PMRPC_ERR_AUDIT_FAILED',
  /** `pmrpc check` found problems in the file (each listed with its own code). */
  CHECK_FAILED: 'PMRPC_ERR_CHECK_FAILED',
});

declare module '../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof InspectErrorCodes> {}
}

/** One thing found wrong, at one step. */
export interface FileProblem {
  /** The step: 'area' (which app), 'layout' (the app's header), 'open', 'inspect' (the state as found), 'recovery' (the dry run), 'audit'. */
  step: 'area' | 'layout' | 'open' | 'inspect' | 'recovery' | 'audit';
  code: string;
  message: string;
}

export interface InspectReport {
  file: string;
  /** The app the file holds (a `pmrpc serve --app` name), or null when no app's area is there. */
  app: string | null;
  /** The kv app's system (one of KV_SYSTEMS: PRISM-KV or the Pilaf baseline), when the file holds a kv area. */
  system?: string;
  /** What the area is, for people ("PRISM-KV", "a PRISM-TX shard"…). */
  holds: string;
  /** The region file header. */
  header: { uuid: string; sizeBytes: number; layoutVersion: number };
  /** The area at offset 0: its magic word (hex). */
  area: { base: number; magic: string };
  /** The app's layout as its header describes it (undefined when the header is unreadable). */
  layout: Record<string, unknown> | undefined;
  /** The app's inspect() on the state as found, before any recovery. */
  summary: Record<string, unknown> | undefined;
  /** The dry run: the app's recover() on the private copy — its summary, or why it refuses. */
  recovery: {
    ran: boolean;
    refused: { code: string; message: string } | undefined;
    summary: Record<string, unknown> | undefined;
    /** rpc: redo-log records replayed, slots invalidated, requests re-executed, epoch after. */
    replay?: number;
    invalidate?: number;
    reexecute?: number;
    epochAfter?: number;
  };
  /** The app's inspect() after the dry run (what a started node would hold). */
  recovered: Record<string, unknown> | undefined;
  /** The app's audit after the dry run, as the crash explorer runs it. */
  audit: AppProblem[];
  /** Everything found wrong, each with a code; empty on a sound file. */
  problems: FileProblem[];
  /** rpc: connection table (with the dry run's resume points), redo log and the application counter, as found. */
  connections?: Array<RpcInspectView['connections'][number] & { resumeSeq: number | undefined; reexecute: number | undefined }>;
  redoLog?: RpcInspectView['redoLog'];
  appCounter?: string;
}

/** `pmrpc check`: the verdict of inspect's steps. */
export interface CheckReport {
  file: string;
  app: string | null;
  system?: string;
  holds: string;
  ok: boolean;
  problems: FileProblem[];
  recovery: InspectReport['recovery'];
}

/** The file's whole image (header + data), read without writing or mapping it. */
function readImage(path: string): { image: Uint8Array; layoutVersion: number; filled: Array<[number, number]> } {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new PmrpcIoError(`cannot open ${path}: ${err.message}`, err.code ?? 'EUNKNOWN', 'open', e);
  }
  try {
    let fileBytes: number;
    let head: Uint8Array;
    try {
      fileBytes = fstatSync(fd).size;
      head = new Uint8Array(Math.min(HEADER_BYTES, fileBytes));
      readSync(fd, head, 0, head.length, 0);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      throw new PmrpcIoError(`cannot read ${path}: ${err.message}`, err.code ?? 'EUNKNOWN', err.syscall ?? 'read', e);
    }
    const header = decodeHeader(head, fileBytes, path);
    let image: Uint8Array;
    try {
      image = new Uint8Array(HEADER_BYTES + header.sizeBytes);
    } catch (e) {
      throw new PmrpcError(InspectErrorCodes.AREA_UNREADABLE, `${path}: no memory for a private copy of its ${header.sizeBytes} data bytes (${(e as Error).message})`, { cause: e });
    }
    // Only the file's data extents: its holes (and reserved, unwritten blocks) read as zeros, which
    // the fresh copy holds already — a mostly empty 4 GiB file is read in what it holds, not 4 GiB.
    let extents: Array<[number, number]>;
    try {
      extents = dataExtents(path);
    } catch {
      extents = [[0, image.length]]; // no SEEK_DATA here: all of it
    }
    for (const [from, to] of extents) {
      const end = Math.min(to, image.length);
      for (let at = from; at < end; ) {
        const n = readSync(fd, image, at, Math.min(end - at, 1 << 30), at);
        if (n === 0) throw new PmrpcIoError(`cannot read ${path}: it ended at ${at} bytes while being read`, 'EIO', 'read');
        at += n;
      }
    }
    // A strict region's journal beside the file (pmem/journal.ts): its records are what the next
    // open replays into the file, so they are applied to this copy (the file is not written).
    // What may be non-zero: the header, the extents read, the journal's runs (the rest is the fresh buffer's zeros, left untouched).
    const filled: Array<[number, number]> = [[0, Math.min(HEADER_BYTES, image.length)], ...extents];
    for (const rec of readJournal(path, image.length, image.subarray(24, 40)).records) {
      for (const run of rec.runs) {
        image.set(run.bytes, run.offset);
        filled.push([run.offset, run.offset + run.bytes.length]);
      }
    }
    return { image, layoutVersion: header.layoutVersion, filled };
  } finally {
    closeSync(fd);
  }
}

function problemOf(step: FileProblem['step'], e: unknown): FileProblem {
  if (e instanceof PmrpcError) return { step, code: e.code, message: e.message.startsWith(`${e.code}: `) ? e.message.slice(e.code.length + 2) : e.message };
  return { step, code: InspectErrorCodes.AREA_UNREADABLE, message: `${step}: ${(e as Error)?.message ?? String(e)}` };
}

/** JSON-able (bigints as decimal strings, no functions). */
function plain(v: object): Record<string, unknown> {
  return JSON.parse(JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x))) as Record<string, unknown>;
}

/**
 * What the PM file at `path` holds, whatever its app, and what a start would do with it. The file
 * is read once into memory and never written, mapped or locked. A file that is not a pmrpc region
 * (or cannot be read) throws its coded error; everything past the region header is reported, a
 * damaged part as a coded problem.
 */
export function inspectFile(path: string): InspectReport {
  if (typeof path !== 'string' || path.length === 0) throw new TypeError('path must be a non-empty string');
  const read = readImage(path);
  const layoutVersion = read.layoutVersion;
  let region: PmemRegion;
  try {
    region = PmemRegion.openImage(read.image, {}, read.filled);
  } catch (e) {
    if (!(e instanceof RangeError)) throw e;
    throw new PmrpcError(InspectErrorCodes.AREA_UNREADABLE, `${path}: no memory for a private copy of it (${e.message})`, { cause: e });
  }
  read.image = new Uint8Array(0); // the region holds its own copy
  const problems: FileProblem[] = [];
  const head = region.load(0, AREA_IDENT_BYTES);
  const magic = new DataView(head.buffer, head.byteOffset, 8).getBigUint64(0, true);
  const holder = identifyArea(head);
  const report: InspectReport = {
    file: path,
    app: null,
    holds: 'no app',
    header: { uuid: region.uuid, sizeBytes: region.sizeBytes, layoutVersion },
    area: { base: 0, magic: `0x${magic.toString(16).padStart(16, '0')}` },
    layout: undefined,
    summary: undefined,
    recovery: { ran: false, refused: undefined, summary: undefined },
    recovered: undefined,
    audit: [],
    problems,
  };
  let server: AppServer | undefined;
  let nic: Rnic | undefined;
  try {
    const app = holder === undefined ? undefined : findAppRecord(holder.app)?.host?.app;
    if (holder === undefined || app === undefined) {
      report.holds = holder?.label ?? (magic === 0n ? 'nothing: never formatted, or a format cut short' : 'an unknown area');
      problems.push({
        step: 'area',
        code: InspectErrorCodes.NO_APP,
        message: holder !== undefined ? `the region holds ${holder.label}, which no node hosts` : magic === 0n ? 'the region holds no app area at offset 0 (no magic: never formatted, or the format was cut short)' : `the region holds no app area pmrpc knows at offset 0 (magic ${report.area.magic})`,
      });
      return report;
    }
    report.app = holder.app;
    if (holder.system !== undefined) report.system = holder.system;
    report.holds = describeHolder(holder);
    let layout: Record<string, unknown>;
    try {
      layout = plain(nodeAppFlags(holder.app).inspectLayout(region, holder));
      report.layout = layout;
    } catch (e) {
      problems.push(problemOf('layout', e));
      return report;
    }
    try {
      nic = new Rnic(region, { entropy: cryptoEntropy });
      // Nothing the app schedules runs: the copy is looked at, not served.
      server = app.open({ region, nic, clock: systemClock, schedule: () => {}, entropy: cryptoEntropy }, app.resolveOptions(nodeAppFlags(holder.app).openOptions?.(holder, layout) ?? {}));
    } catch (e) {
      problems.push(problemOf('open', e));
      return report;
    }
    try {
      report.summary = plain(server.inspect());
    } catch (e) {
      problems.push(problemOf('inspect', e));
    }
    report.recovery.ran = true;
    try {
      report.recovery.summary = plain(server.recover());
    } catch (e) {
      const p = problemOf('recovery', e);
      problems.push(p);
      report.recovery.refused = { code: p.code, message: p.message };
      return report;
    }
    try {
      report.recovered = plain(server.inspect());
    } catch (e) {
      problems.push(problemOf('inspect', e));
    }
    try {
      report.audit = server.audit();
    } catch (e) {
      problems.push(problemOf('audit', e));
    }
    for (const p of report.audit) problems.push({ step: 'audit', code: InspectErrorCodes.AUDIT_FAILED, message: `${p.kind}: ${p.detail}` });
    return report;
  } finally {
    if (report.app !== null && nodeAppFlags(report.app).connectionTable) rpcCompat(report);
    try {
      server?.close();
      nic?.detach();
    } catch {
      // The copy is thrown away with the region.
    }
    region.close({ writeBack: false });
  }
}

/** The rpc report's fields as `pmrpc inspect` has always printed them (top level). */
function rpcCompat(r: InspectReport): void {
  const s = r.recovery.summary as (RpcRecoverySummary & Record<string, unknown>) | undefined;
  const before = r.summary as (RpcInspectView & Record<string, unknown>) | undefined;
  if (s !== undefined) Object.assign(r.recovery, { replay: s.replayed, invalidate: s.invalidated, reexecute: s.reexecuted, epochAfter: s.epoch });
  if (before === undefined) return;
  const resume = new Map((s?.clients ?? []).map((c) => [c.clientId, c]));
  r.connections = before.connections.map((c) => ({ ...c, resumeSeq: resume.get(c.clientId)?.resumeSeq, reexecute: resume.get(c.clientId)?.reexecuted }));
  r.redoLog = before.redoLog;
  r.appCounter = before.appCounter;
}

/** `pmrpc check`: inspect's steps, with a verdict: ok when nothing is wrong. Read-only. */
export function checkFile(path: string): CheckReport {
  const r = inspectFile(path);
  const out: CheckReport = { file: r.file, app: r.app, holds: r.holds, ok: r.problems.length === 0, problems: r.problems, recovery: r.recovery };
  if (r.system !== undefined) out.system = r.system;
  return out;
}
