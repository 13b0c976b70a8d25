import type { Command } from 'commander';
import { runSoak, soakPassed, SOAK_APPS, SOAK_DEFAULTS, type SoakReport } from '../src/testing/index.js';
import { intOption, log, printJson, report } from './output.js';

export function registerSoak(program: Command): void {
  program
    .command('soak')
    .description("run an app's minimal deployment through N × its arena's capacity in operations without a restart, and check that its memory stays bounded (live reclamation)")
    .requiredOption('--app <app>', `the app: ${SOAK_APPS.join(' | ')}`)
    .option('--multiple <n>', `operations = n × the arena's items (default ${SOAK_DEFAULTS.multiple})`, intOption('multiple'))
    .option('--seed <n>', `seed of the workload (default ${SOAK_DEFAULTS.seed})`, intOption('seed'))
    .option('--items <n>', 'arena items per shard (default: the app\'s default layout; a small arena soaks faster)', intOption('items'))
    .option('--clients <n>', `closed-loop clients (default ${SOAK_DEFAULTS.clients})`, intOption('clients'))
    .option('--json', 'print the report as one JSON object on stdout')
    .addHelpText(
      'after',
      `
In-process: the app's shards are app servers on in-memory regions behind the emulated NIC (in-process
fabric), driven by the app's own clients; no TCP, no crash, no restart.
tx: 3 shards with the default layout, 4 clients doing bank transfers (80 % of the picks on 6 hot
accounts: at least 20 % of the transactions abort on conflicts); one operation = one transaction.
kv: one node with the default layout (--items: items per size class), one client: PUT 50 % (values
of every class), DELETE 25 %, GET 25 % checked against the last write, on 64 keys.
rs: 3 replicas with the default layout (--items: items per size class), the clients taking turns:
overwrites 60 % (values of every class), reads 40 % checked against the last write, on 64 blocks.

Report: {app, operations, capacityItems, highWaterItems, aborts, errors, violations, ...}
  capacityItems   the arenas' items (shards × items per shard)
  highWaterItems  most arena items in use at once (not on the NIC's free lists)
  highWaterAt5x   the same over the first 5 × capacityItems operations
  violations      tx: bank conservation, shard audits, leaked items once idle, aborts below 20 %;
                  kv, rs: a GET / read that is not the last write, the audits, leaked items;
                  either: the high water at N × above the one at 5 × by more than 1 % of capacityItems

Exit status: 0 when no operation errored and there is no violation; 1 otherwise. A bad option
exits 1 with PMRPC_ERR_SOAK_APP / PMRPC_ERR_SOAK_BAD_OPTION.
Takes ≈ 1–2 min for tx at the default 50 × on a loaded 2-core machine.`,
    )
    .action(async (opts: { app: string; multiple?: number; seed?: number; items?: number; clients?: number; json?: boolean }) => {
      if (!opts.json) log(`pmrpc soak: app ${opts.app}, ${opts.multiple ?? SOAK_DEFAULTS.multiple} × capacity, seed ${opts.seed ?? SOAK_DEFAULTS.seed}`);
      const r = await runSoak({
        app: opts.app,
        multiple: opts.multiple,
        seed: opts.seed,
        items: opts.items,
        clients: opts.clients,
        progress: opts.json ? undefined : (n, total) => log(`  ${n} / ${total} operations`),
      });
      if (opts.json) printJson(r);
      else printHuman(r);
      if (!soakPassed(r)) process.exitCode = 1;
    });
}

function printHuman(r: SoakReport): void {
  report(
    [
      `${soakPassed(r) ? 'ok  ' : 'FAIL'} soak ${r.app}: ${r.operations} operations (${r.multiple} × ${r.capacityItems} items), ${r.commits} commits, ${r.aborts} aborts (${(r.abortRate * 100).toFixed(1)} %), ${r.errors} errors`,
      `       high water ${r.highWaterItems} items in use (${r.highWaterAt5x} at 5 ×) of ${r.capacityItems}; reclaimed live: ${r.reclaimed.superseded} superseded, ${r.reclaimed.dead} dead, ${r.reclaimed.returned} returned`,
      ...r.firstErrors.map((e) => `       error: ${e}`),
      ...r.violations.map((v) => `       violation: ${v}`),
      `       ${(r.ms / 1000).toFixed(1)} s; replay: pmrpc soak --app ${r.app} --multiple ${r.multiple} --seed ${r.seed}`,
    ].join('\n'),
  );
}
