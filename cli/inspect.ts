/**
 * `pmrpc inspect FILE`: what a PM file of any app holds — region header, the app and its layout,
 * the app's own summary, and what a start's recovery would do (a dry run on a private copy) —
 * read-only: the file is never written, mapped or locked (src/node/inspect.ts).
 */
import type { Command } from 'commander';
import { findNodeAppFlags, inspectFile, type FileProblem, type InspectReport } from '../src/node/index.js';
import { printJson } from './output.js';

/** One line of a JSON-able record: `k v, k v…`; nested records in braces, long arrays counted. */
export function compact(v: unknown, depth = 0): string {
  if (v === null || v === undefined) return '-';
  if (typeof v !== 'object') return String(v);
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    if (v.length > 4 || depth > 1) return `[${v.length}]`;
    return `[${v.map((x) => compact(x, depth + 1)).join('; ')}]`;
  }
  const parts = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined).map(([k, x]) => `${k} ${compact(x, depth + 1)}`);
  return depth === 0 ? parts.join(', ') : `{${parts.join(', ')}}`;
}

export function formatProblems(ps: readonly FileProblem[]): string[] {
  return ps.map((p) => `    ${p.code} [${p.step}] ${p.message}`);
}

function rpcLines(r: InspectReport): string[] {
  const lines: string[] = [];
  if (r.connections !== undefined) {
    lines.push(`  connections: ${r.connections.length}`);
    for (const c of r.connections) {
      lines.push(
        `    client ${c.clientId} (slot ${c.connSlot}): applied ${Math.max(c.tableAppliedSeq, c.logAppliedSeq)} (table ${c.tableAppliedSeq}, log ${c.logAppliedSeq}); ring head ${c.ring.head} tail ${c.ring.tail}: ${c.ring.durableUnprocessed} durable unprocessed; resume at ${c.resumeSeq ?? '?'}`,
      );
    }
  }
  if (r.redoLog !== undefined) {
    const rec = r.redoLog.records;
    lines.push(`  redo log:    ${rec.applied} applied, ${rec['complete-unapplied']} complete not applied, ${rec.incomplete} incomplete, ${rec.none} empty; LSN ${r.redoLog.lsnMin ?? '-'}..${r.redoLog.lsnMax ?? '-'}`);
  }
  if (r.appCounter !== undefined) lines.push(`  app counter: ${r.appCounter}`);
  return lines;
}

const SKIP_IN_SUMMARY = new Set(['app', 'geometry', 'connections', 'redoLog', 'appCounter', 'clients']);

function summaryLine(s: Record<string, unknown>): string {
  return compact(Object.fromEntries(Object.entries(s).filter(([k]) => !SKIP_IN_SUMMARY.has(k))));
}

export function formatInspect(r: InspectReport): string {
  const lines = [
    `pmrpc inspect ${r.file}`,
    `  region:      uuid ${r.header.uuid}, ${r.header.sizeBytes} data bytes (region layout ${r.header.layoutVersion})`,
    `  holds:       ${r.holds} at offset ${r.area.base} (magic ${r.area.magic})`,
  ];
  if (r.layout !== undefined) lines.push(`  layout:      ${compact(r.layout)}`);
  const table = r.app !== null && findNodeAppFlags(r.app)?.connectionTable === true;
  if (table) lines.push(...rpcLines(r));
  if (r.summary !== undefined) lines.push(`  state:       ${summaryLine(r.summary)}`);
  const rec = r.recovery;
  if (rec.refused !== undefined) lines.push(`  recovery would refuse: ${rec.refused.code}: ${rec.refused.message}`);
  else if (rec.replay !== undefined) lines.push(`  recovery would: replay ${rec.replay} records, invalidate ${rec.invalidate} slots, re-execute ${rec.reexecute} requests (epoch → ${rec.epochAfter})`);
  else if (rec.summary !== undefined) lines.push(`  recovery would: ${compact(rec.summary) || 'nothing to repair'}`);
  if (r.recovered !== undefined && !table) lines.push(`  after it:    ${summaryLine(r.recovered)}`);
  if (rec.ran && rec.refused === undefined) lines.push(`  audit:       ${r.audit.length === 0 ? 'sound' : `${r.audit.length} problems`}`);
  if (r.problems.length > 0) lines.push(`  problems:    ${r.problems.length} (\`pmrpc check\` exits non-zero)`, ...formatProblems(r.problems));
  lines.push('  (read-only: the file was not modified)');
  return `${lines.join('\n')}\n`;
}

export function registerInspect(program: Command): void {
  program
    .command('inspect')
    .description('show a PM file of any app (rpc, kv, rs, rslock, tx, txfarm, txford): region header, the app and its layout, its state, and what recovery would do (a dry run on a private copy) — read-only, even on a damaged file')
    .argument('<file>', 'the PM file')
    .option('--json', 'print one JSON document on stdout (its `app` field names the app)')
    .addHelpText('after', '\nThe file is read into memory and never written, mapped or locked: it can be inspected while a node serves it.\nExit 0 when the file could be read (damage is shown, not an error; `pmrpc check` judges it); 1 when it is not a pmrpc region or cannot be read.')
    .action((file: string, opts: { json?: boolean }) => {
      const r = inspectFile(file);
      if (opts.json) printJson(r);
      else process.stdout.write(formatInspect(r));
    });
}
