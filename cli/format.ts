/**
 * `pmrpc format FILE --app A [--size S] [--force]`: creates a node's PM file and formats the app in
 * it (TigerBeetle's format / start split: `serve` then only opens formatted files, unless
 * `--create`). Crash-safe (formatNodeFile): the file is built in a temporary sibling, synced and
 * renamed into place, so a format killed at any moment leaves no file or a complete one. Sparse:
 * `--size 4G` writes only the layout's few pages.
 */
import type { Command } from 'commander';
import { NODE_APP_NAMES, appByName, formatNodeFile } from '../src/node/index.js';
import { intOption, log, printJson, progressBar } from './output.js';
import { nodeAppOptions, refuseForeignFlags, sizeOption, systemOption } from './serve.js';
import { addLayoutFlags, type LayoutFlags } from './layout-flags.js';

interface FormatOpts extends LayoutFlags {
  app: string;
  size: number;
  force?: boolean;
  node: string;
  maxClients?: number;
  system: string;
  cluster?: string;
  json?: boolean;
}

export function registerFormat(program: Command): void {
  const cmd = program
    .command('format')
    .description('create a PM file and format an app in it (then `pmrpc serve --pm FILE` opens it); crash-safe; its whole size reserved on the filesystem')
    .argument('<file>', 'the PM file to create')
    .requiredOption('--app <name>', `the app (${NODE_APP_NAMES.join(', ')}); rs and tx without --cluster: one replica / one shard`)
    .option('--size <bytes>', 'data bytes (K, M, G suffixes; a multiple of 64, at most 4G minus 4K)', sizeOption('size'), 16 << 20)
    .option('--force', 'replace an existing file (its contents are lost; refused while a process holds it)')
    .option('--max-clients <n>', 'rpc app: connection slots (client table size; default 64)', intOption('max-clients'))
    .option('--system <s>', 'kv app: prism (PRISM-KV) or pilaf (the Pilaf-style baseline)', systemOption, 'prism')
    .option('--cluster <file>', 'tx app: the cluster file the node belongs to (its shard index, shard count and options come from there; with --node)')
    .option('--node <id>', 'tx app with --cluster: the node id in the cluster file', 'node')
    .option('--json', 'print the result as one JSON document');
  addLayoutFlags(cmd)
    .addHelpText('after', '\nLayout flags (--kv-slots, --kv-probe-slots, --kv-classes, --rs-blocks, --tx-items) set the app\'s capacity (docs/kv.md, docs/rs.md, docs/tx.md).\nA missing file is created; an existing non-empty one is refused (PMRPC_ERR_REGION_EXISTS) unless --force; one held by a running\nprocess is refused (PMRPC_ERR_FILE_LOCKED, naming its pid). An interrupted format leaves no file at FILE (at most a\nstale .FILE.pmrpc-format beside it, reused by the next format). Progress on stderr when it is a terminal.')
    .action((file: string, opts: FormatOpts, command: Command) => {
      const app = appByName(opts.app);
      refuseForeignFlags(command, app.name);
      const bar = opts.json ? undefined : progressBar(`pmrpc format ${file}`);
      let out: ReturnType<typeof formatNodeFile>;
      try {
        out = formatNodeFile(file, app, nodeAppOptions(app.name, { ...opts, strategy: 'wflush' }), opts.size, {
          replace: opts.force === true,
          ...(bar === undefined ? {} : { progress: (step: number, steps: number, label: string) => bar.update(step, steps, label) }),
        });
      } finally {
        bar?.stop();
      }
      if (opts.json) printJson({ pm: file, ...out });
      else {
        process.stdout.write(`formatted ${file}: app ${out.app}, ${out.sizeBytes} data bytes, uuid ${out.uuid}\n`);
        // A system other than the app's default is named again: serve opens what it is told (PMRPC_ERR_WRONG_APP otherwise).
        const system = command.getOptionValueSource('system') === 'cli' ? ` --system ${opts.system}` : '';
        log(`pmrpc format: start it with \`pmrpc serve --pm ${file} --app ${out.app}${system}\``);
      }
    });
}
