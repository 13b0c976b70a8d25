// The CLI's exit codes and streams (cli/output.ts, docs/errors.md "Command line"): the human
// report on stdout (`> report.txt` keeps it), logs and progress on stderr; a selection of nothing,
// a node not serving, a mutant not caught, an empty history each exit non-zero with their code;
// SIGINT prints the partial summary and the replay line. dist/ is built by pretest.
import t from 'tap';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePorts } from '../../src/cluster/index.js';
import { litmusCatalogue } from '../../src/litmus/index.js';

const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) first`);
const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/cli/output.test.ts)`);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}
/** `pmrpc ...args`, bounded (120 s, then killed). */
function cli(...args: string[]): Promise<Run> {
  return new Promise((res) => {
    execFile(process.execPath, [MAIN, ...args], { timeout: 120_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      const e = err as (Error & { code?: unknown }) | null;
      res({ code: e === null ? 0 : typeof e.code === 'number' ? e.code : null, stdout, stderr });
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'pmrpc-cli-output-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test('litmus: a selection of nothing is PMRPC_ERR_NOTHING_SELECTED; the report is on stdout', async (t) => {
  const [filter, layer, one] = await Promise.all([cli('litmus', '--filter', 'no-such-litmus-name'), cli('litmus', '--layer', 'typo'), cli('litmus', '--filter', litmusCatalogue()[0]!.name, '--seed', String(SEED))]);
  t.equal(filter.code, 1, '--filter that matches nothing exits 1');
  t.match(filter.stderr, /PMRPC_ERR_NOTHING_SELECTED: no litmus has a name containing 'no-such-litmus-name'/);
  t.equal(filter.stdout, '', 'nothing reported');
  t.equal(layer.code, 1, '--layer typo exits 1');
  t.match(layer.stderr, /PMRPC_ERR_NOTHING_SELECTED: layer typo selects no litmus: the layers are pmem, nic/);
  t.equal(one.code, 0, one.stderr);
  t.match(one.stdout, new RegExp(`^ok {3}\\[pmem\\] ${litmusCatalogue()[0]!.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'm'), 'each litmus on stdout');
  t.match(one.stdout, new RegExp(`^1 ok, 0 FAIL \\(seed ${SEED}; replay with --seed ${SEED}\\)$`, 'm'), 'the summary on stdout');
  t.notMatch(one.stderr, /ok, \d+ FAIL/, 'not on stderr');
});

t.test('crash-test: the report on stdout; a mutant not caught says so and exits 3; a bad option is coded', async (t) => {
  const small = ['crash-test', '--strategy', 'wrflush', '--seed', String(SEED), '--requests', '3', '--images-per-point', '1', '--no-nested'];
  // skip-flush removes a flush only wflush and sflush issue: under wrflush nothing can show it.
  const [ok, notCaught, bad, badCount] = await Promise.all([cli(...small), cli(...small, '--mutant', 'skip-flush', '--json'), cli('crash-test', '--seed', 'x'), cli('crash-test', '--requests', '0')]);
  t.equal(ok.code, 0, ok.stderr);
  t.match(ok.stdout, /^pmrpc crash-test --app rpc: seeds \d+, strategy wrflush/m, 'what ran, on stdout');
  t.match(ok.stdout, /^\d+ of \d+ crash points .* images/m, 'the summary on stdout');
  t.match(ok.stdout, /^0 violations$/m);
  // stderr: progress only (a line every few seconds off a terminal), never the report.
  t.notMatch(ok.stderr, /^(\d+ of \d+ crash points|\d+ violations?$|pmrpc crash-test --app)/m, 'no report on stderr');
  t.equal(notCaught.code, 3, `an uncaught mutant exits 3: ${notCaught.stderr}`);
  t.match(JSON.parse(notCaught.stdout), { mutant: 'skip-flush', caught: false, violations: [] }, '--json: one document with caught: false');
  t.match(notCaught.stderr, /PMRPC_ERR_MUTANT_NOT_CAUGHT: mutant skip-flush of --app rpc was not caught by seed/);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /PMRPC_ERR_BAD_OPTION: --seed must be an integer, got x/);
  t.equal(badCount.code, 1);
  t.match(badCount.stderr, /PMRPC_ERR_BAD_OPTION: requests must be an integer in \[1, 100000\], got 0/, 'the workload\'s own check, coded');
});

t.test('crash-test: SIGINT prints the partial summary and the replay line, exit 130', async (t) => {
  // A run far longer than the moment it is interrupted: the report's first line is printed
  // right before the run starts (and its SIGINT handler with it).
  const args = ['crash-test', '--strategy', 'wflush', '--seed', String(SEED), '--requests', '2000', '--clients', '4', '--images-per-point', '16'];
  const child = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const killer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  const code = await new Promise<number | null>((res) => {
    child.stdout.on('data', (d: Buffer) => {
      const first = stdout === '';
      stdout += d.toString();
      if (first) child.kill('SIGINT');
    });
    child.once('exit', (c) => res(c));
  });
  clearTimeout(killer);
  t.equal(code, 130, `exit 130 after SIGINT: ${stderr}`);
  t.match(stdout, /^interrupted \(SIGINT\): 0 of 1 seed done/m, 'the partial summary');
  t.match(stdout, new RegExp(`^replay: pmrpc ${args.join(' ')}$`, 'm'), 'the replay line: this command');
});

t.test('swarm: the report on stdout', async (t) => {
  const r = await cli('swarm', '--seeds', `${SEED}..${SEED}`, '--app', 'rpc', '--seconds', '0.005', '--no-history');
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /^pmrpc swarm: seeds/m);
  t.match(r.stdout, /^1 seeds x 1 apps: .*0 failures/m);
  t.notMatch(r.stderr, /seeds x/);
});

t.test('cluster status exits 1 unless every node serves', async (t) => {
  const [port] = await freePorts(1);
  const file = join(dir, 'one.json');
  writeFileSync(file, JSON.stringify({ version: 1, nodes: [{ id: 'n1', app: 'rpc', port, pm: 'n1.pm' }] }));
  const [human, json] = await Promise.all([cli('cluster', 'status', file), cli('cluster', 'status', file, '--json')]);
  t.equal(human.code, 1);
  t.match(human.stdout, /^n1 +rpc +127\.0\.0\.1:\d+ +down/m, 'the status on stdout');
  t.match(human.stderr, /PMRPC_ERR_NODE_NOT_SERVING: n1 down \(of 1 nodes\)/);
  t.equal(json.code, 1);
  t.match(JSON.parse(json.stdout), { serving: false, nodes: [{ id: 'n1', state: 'down' }] });
});

t.test('bench history without a history is PMRPC_ERR_NO_HISTORY', async (t) => {
  const empty = join(dir, 'empty');
  const r = await cli('bench', 'history', '--out', empty);
  t.equal(r.code, 1);
  t.match(r.stderr, /PMRPC_ERR_NO_HISTORY: no bench history at .*empty\/history\.sqlite/);
  t.equal(r.stdout, '');
});
