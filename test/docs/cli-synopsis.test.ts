// Every `pmrpc …` command that README.md and docs/*.md write (synopses, shell lines, inline code)
// names a command the CLI has, and every --flag it gives is one of that command's options in its
// --help. dist/ is built by pretest.
import t from 'tap';
import { pathToFileURL } from 'node:url';
import { Command } from 'commander';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, docCommands, docFiles } from './blocks.js';

const MAIN = join(ROOT, 'dist/cli/main.js');
if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) first`);

/**
 * The CLI's command tree: 'crash-test' → the options its --help lists; 'cluster up' → its own.
 * One process for all (a node process per --help costs seconds on a loaded machine): main.js
 * builds its commander program and hands it to parseAsync, which is caught here instead of parsing.
 */
async function commandTree(): Promise<Map<string, Set<string>>> {
  let program: Command | undefined;
  const parseAsync = Command.prototype.parseAsync;
  Command.prototype.parseAsync = function (this: Command) {
    program = this;
    return Promise.resolve(this);
  };
  try {
    await import(pathToFileURL(MAIN).href);
  } finally {
    Command.prototype.parseAsync = parseAsync;
  }
  if (program === undefined) throw new Error(`${MAIN} did not build a commander program`);
  const tree = new Map<string, Set<string>>();
  const walk = (c: Command, path: string[]): void => {
    // What `pmrpc <path> --help` prints: its Options section.
    const h = c.helpInformation();
    const opts = new Set([...(h.split(/^Options:$/m)[1] ?? '').split(/^Commands:$/m)[0]!.matchAll(/^ {2}(?:-\w, )?(--[a-z][a-z0-9-]*)/gm)].map((m) => m[1]!));
    if (path.length > 0) tree.set(path.join(' '), opts);
    for (const s of c.commands) if (s.name() !== 'help') walk(s, [...path, s.name()]);
  };
  walk(program, []);
  return tree;
}

t.test('every pmrpc command in the docs exists and every flag it gives is in its --help', async (t) => {
  const tree = await commandTree();
  t.ok(tree.has('crash-test') && tree.has('cluster status') && tree.has('bench history'), `the CLI's commands: ${[...tree.keys()].join(', ')}`);
  const cmds = docCommands();
  t.ok(cmds.length >= 100, `${cmds.length} pmrpc commands in README.md and docs/*.md`);
  t.ok(cmds.some((c) => c.file === 'docs/cli.md' && c.words[0] === 'crash-test' && c.flags.includes('--seed')), 'docs/cli.md synopses are among them');
  const problems: string[] = [];
  for (const c of cmds) {
    const where = `${c.file}:${c.line}: \`${c.text}\``;
    const [cmd, sub] = c.words;
    const alternatives = cmd!.split('|');
    for (const a of alternatives) {
      if (!tree.has(a)) {
        problems.push(`${where}: no command ${a}`);
        continue;
      }
      // A command with subcommands: the second word is one (or several: up|status|down).
      const hasSubs = [...tree.keys()].some((k) => k.startsWith(`${a} `));
      const subs = [...tree.keys()].filter((k) => k.startsWith(`${a} `));
      // `pmrpc bench <suite> --model`: a placeholder stands for any subcommand that has the flag.
      if (hasSubs && sub !== undefined && /^<.+>$/.test(sub)) {
        for (const f of c.flags) if (!subs.some((k) => tree.get(k)!.has(f))) problems.push(`${where}: no subcommand of ${a} has ${f}`);
        continue;
      }
      const paths = hasSubs && sub !== undefined ? sub.split('|').map((s) => `${a} ${s}`) : [a];
      for (const p of paths) {
        const opts = tree.get(p);
        if (opts === undefined) {
          problems.push(`${where}: no command ${p}`);
          continue;
        }
        for (const f of c.flags) if (!opts.has(f)) problems.push(`${where}: ${p} has no option ${f}`);
      }
    }
  }
  t.same(problems, [], 'commands and flags the CLI does not have');
});

// The CLI's own lists, from the compiled modules main.js loaded above (no second compile).
t.test('app lists and mutant counts in the docs are the CLI\'s', async (t) => {
  const { NODE_APPS } = await import('../../dist/src/node/index.js');
  const { SWARM_APPS } = await import('../../dist/src/testing/crash/index.js');
  const { CRASH_TEST_APPS, mutantLines } = await import('../../dist/cli/crash-test.js');
  const { DEMO_APPS } = await import('../../dist/cli/demo.js');
  // The values --app takes, per command: a synopsis that lists them (`[--app a|b|c]`, or a
  // code block) lists them all; prose may name a few (`serve --app rs|rslock`), each one the CLI's.
  const apps: Record<string, readonly string[]> = { serve: Object.keys(NODE_APPS), 'crash-test': CRASH_TEST_APPS, demo: DEMO_APPS, swarm: ['all', ...SWARM_APPS] };
  const problems: string[] = [];
  let lists = 0;
  for (const c of docCommands()) {
    const m = /--app \[?([a-z]+(?:\\?\|[a-z]+)+)/.exec(c.text);
    const known = apps[c.words[0]!];
    if (m === null || known === undefined) continue;
    lists++;
    const given = m[1]!.split(/\\?\|/);
    const missing = known.filter((a) => !given.includes(a));
    const extra = given.filter((a) => !known.includes(a));
    if ((missing.length > 0 && (c.inBlock || c.text.includes('[--app'))) || extra.length > 0) problems.push(`${c.file}:${c.line}: \`${c.text}\`: --app ${missing.length > 0 ? `lacks ${missing.join(', ')}` : ''}${extra.length > 0 ? ` names ${extra.join(', ')}, which ${c.words[0]} does not run` : ''}`);
  }
  t.ok(lists >= 4, `${lists} --app lists`);
  // `pmrpc bench a|b|c --model P`: the suites with a modelled counterpart, all of them in a synopsis.
  const { MODELLED_SUITES } = await import('../../dist/bench/index.js');
  const modelled = Object.keys(MODELLED_SUITES);
  for (const c of docCommands().filter((x) => x.words[0] === 'bench' && x.flags.includes('--model') && x.words[1]?.includes('|'))) {
    const given = c.words[1]!.split('|');
    if (given.some((s) => !modelled.includes(s)) || (c.inBlock && modelled.some((s) => !given.includes(s)))) problems.push(`${c.file}:${c.line}: \`${c.text}\`: the modelled suites are ${modelled.join(', ')}`);
  }
  // The launcher's state directory, as docs/cli.md names it.
  const { stateDirOf } = await import('../../dist/cli/cluster.js');
  const { loadClusterFile } = await import('../../dist/src/cluster/index.js');
  const state = stateDirOf(loadClusterFile(join(ROOT, 'examples/cluster-3.json')), undefined);
  t.match(readFileSync(join(ROOT, 'docs/cli.md'), 'utf8'), `\`examples/${state.slice(join(ROOT, 'examples').length + 1)}/\``, `docs/cli.md names the state dir of examples/cluster-3.json: ${state}`);
  // "N mutants" (digits or a word): the app named nearest before it (`--app X`) or the file's; of an
  // app with systems (kv), those of the system named nearest before it (`--system S`) or its default.
  const { crashApp } = await import('../../dist/src/testing/crash/index.js');
  const words = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen', 'twenty'];
  const fileApp: Record<string, string> = { 'docs/rs.md': 'rs', 'docs/kv.md': 'kv', 'docs/tx.md': 'tx', 'docs/rpc.md': 'rpc' };
  let counts = 0;
  for (const file of docFiles()) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    for (const m of text.matchAll(new RegExp(`\\b(\\d+|${words.join('|')}) mutants\\b`, 'gi'))) {
      const before = text.slice(Math.max(0, m.index - 300), m.index);
      const app = [...before.matchAll(/--app ([a-z]+)/g)].pop()?.[1] ?? fileApp[file];
      if (app === undefined) continue;
      counts++;
      const n = /^\d+$/.test(m[1]!) ? Number(m[1]) : words.indexOf(m[1]!.toLowerCase());
      const a = crashApp(app);
      const system = [...before.matchAll(/--system ([a-z]+)/g)].pop()?.[1] ?? a.systems?.[0];
      const actual = a.mutants.filter((x: { system?: string }) => x.system === undefined || x.system === system).length;
      t.ok(actual <= mutantLines(app).length, `${app}${system !== undefined ? ` (${system})` : ''}: ${actual} of the ${mutantLines(app).length} --list-mutants lines`);
      if (n !== actual) problems.push(`${file}:${text.slice(0, m.index).split('\n').length}: "${m[0]}" of --app ${app}${system !== undefined ? ` --system ${system}` : ''}: crash-test --app ${app} lists ${actual}`);
    }
  }
  t.ok(counts >= 2, `${counts} mutant counts`);
  t.same(problems, [], 'app lists and mutant counts that differ from the CLI');
});
