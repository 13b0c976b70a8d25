/**
 * `pmrpc check FILE`: an offline, read-only audit of a PM file of any app — the dry-run recovery
 * and the app's audit as the crash explorer runs them on crash images (src/node/inspect.ts).
 * Exit 0 on a sound file; 1 with PMRPC_ERR_CHECK_FAILED and a coded problem list on damage.
 */
import type { Command } from 'commander';
import { PmrpcError } from '../pmem/index.js';
import { checkFile, InspectErrorCodes, type CheckReport } from '../src/node/index.js';
import { compact, formatProblems } from './inspect.js';
import { printJson } from './output.js';

export function formatCheck(r: CheckReport): string {
  const head = `pmrpc check ${r.file}: ${r.holds}`;
  if (r.ok) {
    const rec = r.recovery.summary === undefined ? '' : `; recovery would: ${compact(r.recovery.summary) || 'nothing to repair'}`;
    return `${head}: ok — audit sound${rec}\n`;
  }
  return `${[`${head}: ${r.problems.length} problem${r.problems.length === 1 ? '' : 's'}`, ...formatProblems(r.problems)].join('\n')}\n`;
}

export function registerCheck(program: Command): void {
  program
    .command('check')
    .description('audit a PM file of any app offline, read-only: the dry-run recovery and the app\'s invariants (as the crash explorer checks crash images); exit 0 when sound, non-zero on damage')
    .argument('<file>', 'the PM file')
    .option('--json', 'print one JSON document on stdout: {file, app, holds, ok, problems: [{step, code, message}], recovery}')
    .addHelpText('after', '\nThe file is read into memory and never written, mapped or locked (an operator can check a file before `pmrpc serve`).\nExit 0: sound. Exit 1: PMRPC_ERR_CHECK_FAILED (the problems are listed, each with its code), or the file is not a pmrpc region / cannot be read.')
    .action((file: string, opts: { json?: boolean }) => {
      const r = checkFile(file);
      if (opts.json) printJson(r);
      else process.stdout.write(formatCheck(r));
      if (!r.ok) throw new PmrpcError(InspectErrorCodes.CHECK_FAILED, `${file}: ${r.problems.length} problem(s), first ${r.problems[0]!.code}`);
    });
}
