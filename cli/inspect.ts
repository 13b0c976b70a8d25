/** `pmrpc inspect FILE`: a PM file's header, connection table, rings and redo log, read-only. */
import type { Command } from 'commander';
import { inspectFile, type InspectReport } from '../src/server/index.js';
import { printJson } from './output.js';

export function formatInspect(r: InspectReport): string {
  const L = r.layout;
  const lines = [
    `pmrpc inspect ${r.file}`,
    `  region:      uuid ${r.header.uuid}, ${r.header.sizeBytes} data bytes`,
    `  layout:      version ${L.version}, epoch ${L.epoch}, next client id ${L.nextClientId}; ${L.maxClients} connection slots × ${L.ringSlots}-slot rings of ${L.slotBytes} B; log ${L.logRecords} × ${L.recordBytes} B; app area ${L.appBytes} B at ${L.appOffset}`,
    `  connections: ${r.connections.length}`,
  ];
  for (const c of r.connections) {
    lines.push(
      `    client ${c.clientId} (slot ${c.connSlot}): applied ${Math.max(c.tableAppliedSeq, c.logAppliedSeq)} (table ${c.tableAppliedSeq}, log ${c.logAppliedSeq}); ring head ${c.ring.head} tail ${c.ring.tail}: ${c.ring.durableUnprocessed} durable unprocessed; resume at ${c.resumeSeq ?? '?'}`,
    );
  }
  const rec = r.redoLog.records;
  lines.push(`  redo log:    ${rec.applied} applied, ${rec['complete-unapplied']} complete not applied, ${rec.incomplete} incomplete, ${rec.none} empty; LSN ${r.redoLog.lsnMin ?? '-'}..${r.redoLog.lsnMax ?? '-'}`);
  lines.push(
    r.recovery.refused === undefined
      ? `  recovery would: replay ${r.recovery.replay} records, invalidate ${r.recovery.invalidate} slots, re-execute ${r.recovery.reexecute} requests (epoch → ${r.recovery.epochAfter})`
      : `  recovery would refuse: ${r.recovery.refused.message}`,
  );
  lines.push(`  app counter: ${r.appCounter}`);
  lines.push('  (read-only: the file was not modified)');
  return `${lines.join('\n')}\n`;
}

export function registerInspect(program: Command): void {
  program
    .command('inspect')
    .description('show a PM file: header, connection table, rings (durable unprocessed entries), redo log, and what recovery would do — read-only')
    .argument('<file>', 'the PM file')
    .option('--json', 'print one JSON document on stdout')
    .action((file: string, opts: { json?: boolean }) => {
      const r = inspectFile(file);
      if (opts.json) printJson(r);
      else process.stdout.write(formatInspect(r));
    });
}
