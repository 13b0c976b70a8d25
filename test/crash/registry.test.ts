// The app registry (issue 26 item 4): one list of app records, APP_RECORDS (src/node/apps.ts), and
// one lookup (appRecord / findAppRecord), with the crash part of each crash-testable record attached
// by name from src/testing/crash/apps.ts (CRASH_PARTS); the node host, the explorer, the swarm and
// the CLI list and pick apps through it, and nothing in cli/, src/testing/, src/cluster/ or
// src/node/ spells an app's name outside those two files — but for the allow-list below, each
// entry with why.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { APP_FLAGS } from '../../cli/serve.js';
import { CRASH_TEST_APPS, mutantLines } from '../../cli/crash-test.js';
import { DEMO_APPS } from '../../cli/demo.js';
import { APP_NAMES, APP_RECORDS, appByName, appRecord, findAppRecord, NODE_APP_NAMES, NODE_APPS, nodeAppFlags } from '../../src/node/index.js';
import { LAYOUT_OPTION_APPS } from '../../src/cluster/index.js';
import { SOAK_APPS, SOAK_DEFAULTS } from '../../src/testing/index.js';
import { crashApp, crashAppHelp, CRASH_APPS, findMutantEntry, mutantName, mutantTargets, MUTANT_APPS, parseMutant, SWARM_APPS } from '../../src/testing/crash/index.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const NAMES = ['rpc', 'kv', 'pilaf', 'rs', 'rslock', 'tx', 'txfarm', 'txford', 'txlock', 'register', 'recovery'];
const LITERAL = new RegExp(`(['"\`])(${NAMES.join('|')})\\1`, 'g');

/** Files that are registries: every app name they spell is theirs to spell. */
const REGISTRIES = ['src/testing/crash/apps.ts', 'src/node/apps.ts'];

/** The folders scanned. */
const SCANNED = ['cli', 'src/testing', 'src/cluster', 'src/node'];

/** What must remain, and why: file, a pattern of the line, why. Each entry must still match (a stale one fails). */
const ALLOWED: ReadonlyArray<{ file: string; line: RegExp; why: string }> = [
  // An explorer app names itself: the name the registry record's explorerApp returns, in the app's own module.
  { file: 'src/testing/crash/rpc.ts', line: /^\s*name: 'rpc',$/, why: "the rpc explorer app's own name" },
  { file: 'src/testing/crash/kv.ts', line: /^\s*name: 'kv',$/, why: "the kv explorer app's own name" },
  { file: 'src/testing/crash/rs.ts', line: /^\s*name: 'rs',$/, why: "the rs explorer app's own name" },
  { file: 'src/testing/crash/rslock.ts', line: /^\s*name: 'rslock',$/, why: "the rslock explorer app's own name" },
  { file: 'src/testing/crash/tx.ts', line: /^\s*name: 'tx',$/, why: "the tx explorer app's own name" },
  { file: 'src/testing/crash/register.ts', line: /name: system\?\.name \?\? 'register',/, why: "the register explorer app's own name" },
  { file: 'src/testing/crash/recovery.ts', line: /name: 'recovery',|readonly app = 'recovery';|app: 'recovery', epoch/, why: "the recovery explorer app's own name and its server's inspect view" },
  // Not an app: 'recovery' is also a violation kind (a recovery that failed or never answered).
  { file: 'src/testing/crash/explorer.ts', line: /kind: 'recovery'/, why: "the violation kind 'recovery', not the app" },
  { file: 'src/testing/crash/multi.ts', line: /kind: 'recovery'/, why: "the violation kind 'recovery', not the app" },
  { file: 'src/testing/crash/kv.ts', line: /kind: 'recovery'/, why: "the violation kind 'recovery', not the app" },
  { file: 'src/testing/crash/recovery.ts', line: /'digest' : 'recovery'/, why: "the violation kind 'recovery', not the app" },
  // Not an app: the kv workload checks its `system` option (prism or the Pilaf baseline).
  { file: 'src/testing/crash/kv.ts', line: /o\.system !== 'prism' && o\.system !== 'pilaf'/, why: "the kv workload's system option, checked where the workload is resolved" },
  // Not an app: 'recovery' is also a step of `pmrpc inspect` (the dry-run recovery) and the report's field of it.
  { file: 'src/node/inspect.ts', line: /'(open|inspect)' \| 'recovery' \||\(the state as found\), 'recovery' \(the dry run\)|InspectReport\['recovery'\]|problemOf\('recovery'/, why: "inspect's step 'recovery', not the app" },
  // The public type of Cluster.connect's connections: callers narrow on the app's name (a kv node's app gives its kv client).
  { file: 'src/cluster/client.ts', line: /^\s*\| \{ id: string; app: '(rpc|kv|rs)'; client: '[a-z-]+';/, why: 'the public NodeConnection type, narrowed on the app name' },
];

function files(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(`${dir}/${e.name}`) : e.name.endsWith('.ts') ? [`${dir}/${e.name}`] : []));
}

t.test('no app name is spelled in cli/, src/testing/, src/cluster/ or src/node/ outside the registries (but the allow-list)', async (t) => {
  const used = new Set<number>();
  const stray: string[] = [];
  for (const file of SCANNED.flatMap((d) => files(d))) {
    if (REGISTRIES.includes(file)) continue;
    readFileSync(join(ROOT, file), 'utf8').split('\n').forEach((line, i) => {
      if (line.match(LITERAL) === null) return;
      const k = ALLOWED.findIndex((a) => a.file === file && a.line.test(line));
      if (k < 0) stray.push(`${file}:${i + 1}: ${line.trim()}`);
      else used.add(k);
    });
  }
  t.same(stray, [], 'app names outside the registries');
  t.same(ALLOWED.filter((_, k) => !used.has(k)).map((a) => `${a.file}: ${a.why}`), [], 'allow-list entries that no longer match (drop them)');
});

t.test('one list of app records, one lookup: every front end\'s list is a filter of it, in its order', async (t) => {
  t.same([...APP_NAMES], ['rpc', 'kv', 'register', 'recovery', 'rs', 'rslock', 'tx', 'txfarm', 'txford'], 'every app, once');
  t.equal(new Set(APP_NAMES).size, APP_NAMES.length, 'no name twice');
  t.same(CRASH_APPS.map((a) => a.name), APP_RECORDS.filter((r) => r.crash).map((r) => r.name), 'crash-test --app: the crash-testable records, in registry order');
  t.same([...NODE_APP_NAMES], APP_RECORDS.filter((r) => 'host' in r).map((r) => r.name), 'serve --app: the hostable records, in registry order');
  for (const r of APP_RECORDS) {
    t.equal(appRecord(r.name), r, `${r.name}: the lookup finds its record`);
    if ('host' in r) {
      t.equal(appByName(r.name), r.host.app, `${r.name}: a node hosts its record's App`);
      t.equal(NODE_APPS[r.name], r.host.app);
      t.equal(nodeAppFlags(r.name), r.host.flags, `${r.name}: its node part`);
      t.equal(r.host.app.name, r.name, `${r.name}: the App's own name is its record's`);
    } else t.throws(() => appByName(r.name), { code: 'PMRPC_ERR_UNKNOWN_APP', message: /a node hosts one of rpc, kv, rs, rslock, tx, txfarm, txford/ }, `${r.name}: no node hosts it`);
    if (r.crash) t.equal(crashApp(r.name).name, r.name, `${r.name}: its crash part, by name`);
    else t.throws(() => crashApp(r.name), /app must be one of rpc, kv, register, recovery, rs, rslock, tx, got/, `${r.name}: not crash-testable`);
  }
  t.equal(findAppRecord('nope'), undefined);
  t.throws(() => appRecord('nope'), { code: 'PMRPC_ERR_UNKNOWN_APP', message: 'unknown app "nope": one of rpc, kv, register, recovery, rs, rslock, tx, txfarm, txford' });
  t.throws(() => appByName('nope'), { code: 'PMRPC_ERR_UNKNOWN_APP' });
});

t.test('the front ends list the registries', async (t) => {
  t.same([...CRASH_TEST_APPS], ['rpc', 'kv', 'register', 'recovery', 'rs', 'rslock', 'tx'], 'crash-test --app');
  t.same([...MUTANT_APPS], [...CRASH_TEST_APPS], 'the mutant sweep');
  // The order is part of the swarm's seeds (an app's index among SWARM_APPS is mixed into its draws).
  t.same([...SWARM_APPS], ['rpc', 'kv', 'rs', 'tx'], 'the swarm, in its seed order');
  t.same([...NODE_APP_NAMES], ['rpc', 'kv', 'rs', 'rslock', 'tx', 'txfarm', 'txford'], 'serve --app');
  t.same([...DEMO_APPS], ['rpc', 'kv'], 'demo --app');
  t.same([...SOAK_APPS], ['kv', 'rs', 'tx'], 'soak --app: the records with a soak');
  t.equal(SOAK_DEFAULTS.app, 'tx', "the soak's default app");
  t.same(LAYOUT_OPTION_APPS, { kvSlots: 'kv', kvProbeSlots: 'kv', kvClasses: 'kv', rsBlocks: 'rs', txItems: 'tx' }, 'layout options, from the node records');
  t.same(NODE_APP_NAMES.map((a) => [a, nodeAppFlags(a).connect ?? null]), [['rpc', 'rpc-client'], ['kv', 'kv-client'], ['rs', 'queue-pair'], ['rslock', null], ['tx', null], ['txfarm', null], ['txford', null]], "Cluster.connect's client per app");
  t.same(NODE_APP_NAMES.filter((a) => nodeAppFlags(a).clusterShard), ['tx'], 'the apps whose cluster nodes are shards');
  for (const a of CRASH_APPS) t.match(crashAppHelp(), `'${a.name}' (${a.help})`, `--app help names ${a.name}`);
  t.same(APP_FLAGS, {
    strategy: { flag: '--strategy', apps: ['rpc'] },
    keepResults: { flag: '--keep-results', apps: ['rpc'] },
    maxClients: { flag: '--max-clients', apps: ['rpc'] },
    leaseMs: { flag: '--lease-ms', apps: ['rpc', 'tx'] },
    system: { flag: '--system', apps: ['kv'] },
    cluster: { flag: '--cluster', apps: ['tx'] },
  }, "serve's app-specific flags, from NODE_APP_FLAGS");
});

t.test('mutants: --list-mutants, names and aliases from the records', async (t) => {
  for (const a of CRASH_APPS) {
    t.same(mutantLines(a.name), a.mutants.map((m) => `${m.name}\t${m.listed}`), `${a.name}: --list-mutants`);
    t.ok(a.mutants.length > 0, `${a.name} has mutants`);
    for (const m of a.mutants) {
      t.equal(mutantName(a, m.name), m.name);
      for (const alias of m.aliases) t.equal(mutantName(a, alias), m.name, `${a.name}: ${alias} is ${m.name}`);
    }
  }
  // kv's mutants were renamed to kebab-case: each former name is an alias (--mutant, --mutants, swarm --mutant kv:NAME).
  const kv = crashApp('kv');
  t.equal(mutantName(kv, 'narrowIndexFlush'), 'narrow-index-flush');
  t.ok(kv.mutants.filter((m) => m.system === 'prism').every((m) => /^[a-z][a-z0-9-]*$/.test(m.name) && m.aliases.length === 1), 'kv (PRISM-KV): kebab-case names, one alias each');
  // The Pilaf baseline's mutants are kv's too, of its system 'pilaf' (listed `pilaf`); new names, no aliases.
  t.same(kv.mutants.filter((m) => m.system === 'pilaf').map((m) => [m.name, m.listed, m.aliases.length]), [['publish-before-item-persist', 'pilaf', 0], ['skip-entry-persist', 'pilaf', 0], ['clear-torn-entry', 'pilaf', 0]]);
  t.same(kv.mutants.map((m) => m.system ?? null).filter((x) => x !== 'prism' && x !== 'pilaf'), [], 'every kv mutant names its system');
  t.same(kv.systems, ['prism', 'pilaf'], "kv's systems, the default first");
  t.same(mutantTargets('kv', 'narrowIndexFlush,drop-heap-flush').map((x) => x.name), ['narrow-index-flush', 'drop-heap-flush']);
  t.same(parseMutant('kv:unconditionalCas'), { app: 'kv', name: 'unconditional-cas' });
  // So were rs's and recovery's: every app's mutants are kebab-case now.
  for (const a of CRASH_APPS) t.ok(a.mutants.every((m) => /^[a-z][a-z0-9-]*$/.test(m.name)), `${a.name}: kebab-case mutant names`);
  for (const name of ['rs', 'recovery']) t.ok(crashApp(name).mutants.every((m) => m.aliases.length === 1 && /[A-Z]/.test(m.aliases[0]!)), `${name}: one alias each, the old camelCase name`);
  t.equal(mutantName(crashApp('rs'), 'readWithoutFlush'), 'read-without-flush');
  t.equal(mutantName(crashApp('recovery'), 'skipChecksumAtPoll'), 'skip-checksum-at-poll');
  t.equal(mutantName(crashApp('recovery'), 'ackBeforePersist'), 'ack-before-persist');
  t.same(parseMutant('rs:reuseOwnTag'), { app: 'rs', name: 'reuse-own-tag' });
  t.throws(() => mutantName(crashApp('rs'), 'nope', '--mutant'), /--mutant must be one of .*, got nope \(unknown mutant nope of --app rs\)/);
  t.throws(() => crashApp('nope'), /app must be one of rpc, kv, register, recovery, rs, rslock, tx, got nope/);
  t.equal(findMutantEntry(crashApp('tx'), 'nope'), undefined);
  // rpc's mutant sweep runs a mutant once per strategy it lists; an unlisted one is equivalent.
  const rpc = mutantTargets('rpc', 'all');
  t.ok(rpc.every((x) => x.strategy !== null || x.equivalent !== undefined));
  t.ok(mutantTargets('kv', 'all').every((x) => x.strategy === null));
  t.same(parseMutant('tx:skip-prepare-flush'), { app: 'tx', name: 'skip-prepare-flush' });
  t.throws(() => parseMutant('register:count-failed-cas'), /mutant must be APP:NAME with APP one of rpc, kv, rs, tx/);
});

t.test('crash-test refuses what a record says does not apply (the CLI on dist/)', async (t) => {
  const { spawnSync } = await import('node:child_process');
  const CLI = join(ROOT, 'dist/cli/main.js');
  const run = (...args: string[]) => spawnSync(process.execPath, [CLI, 'crash-test', ...args], { encoding: 'utf8', timeout: 120_000 });
  // Exhaustive mode has a tiny workload for kv and the register only (recovery ran the register's before the registry).
  for (const app of ['recovery', 'rs', 'tx']) {
    const r = run('--app', app, '--exhaustive');
    t.equal(r.status, 1, `${app} --exhaustive: exit 1`);
    t.match(r.stderr, /PMRPC_ERR_BAD_OPTION: --exhaustive supports --app kv or register/);
  }
  const runs = run('--app', 'rpc', '--crash-runs', '2');
  t.match(runs.stderr, /--crash-runs and --crash-plan need --app kv, register, rs, tx/);
  const alias = run('--app', 'kv', '--mutant', 'narrowIndexFlush', '--list-mutants');
  t.equal(alias.status, 0);
  t.match(alias.stdout, /^drop-heap-flush\tprism-kv\n/);
});
