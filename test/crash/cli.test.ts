// `pmrpc crash-test` as a user runs it (dist/ is built by pretest): --list-mutants, --json, exit status.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MUTANTS } from '../../src/testing/crash/index.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/crash/cli.test.ts)`);

const run = (...args: string[]) => spawnSync(process.execPath, [CLI, 'crash-test', ...args], { encoding: 'utf8', timeout: 240_000 });

t.test('--list-mutants: name<TAB>strategies per line, nothing else on stdout', async (t) => {
  const r = run('--list-mutants');
  t.equal(r.status, 0);
  const lines = r.stdout.trimEnd().split('\n');
  t.equal(lines.length, MUTANTS.length);
  for (const [i, line] of lines.entries()) {
    t.match(line, /^[a-z][a-z0-9-]*\t[a-z]+(,[a-z]+)*$/);
    t.equal(line, `${MUTANTS[i]!.name}\t${MUTANTS[i]!.strategies.length > 0 ? MUTANTS[i]!.strategies.join(',') : 'none'}`); // none: equivalent in the rpc app
  }
});

t.test('--json: exactly one JSON document; exit 0 without violations', async (t) => {
  const r = run('--strategy', 'wrflush', '--seed', String(SEED), '--requests', '9', '--no-nested', '--json');
  t.equal(r.status, 0, r.stderr);
  const doc = JSON.parse(r.stdout) as Record<string, unknown>;
  t.equal(doc.strategy, 'wrflush');
  t.equal(doc.seed, SEED);
  t.ok((doc.crashPoints as number) > 0 && (doc.imagesChecked as number) > 0);
  t.type(doc.imagesPerSecond, 'number');
  t.same(doc.violations, []);
});

t.test('violations: exit 1, each with the command that reproduces it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-cli-timeline-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = run('--strategy', 'raw', '--ddio', 'on', '--seed', String(SEED), '--requests', '9', '--no-nested', '--json', '--timeline', dir);
  t.equal(r.status, 1);
  const doc = JSON.parse(r.stdout) as { violations: Array<{ replay: string; detail: string; timeline?: string }> };
  t.ok(doc.violations.length > 0);
  const page = doc.violations[0]!.timeline;
  t.ok(page !== undefined && page.startsWith(dir) && existsSync(page), `--timeline: the first violation's page ${page}`);
  t.match(readFileSync(page!, 'utf8'), /crash: point \d+/);
  const cmd = doc.violations[0]!.replay;
  t.match(cmd, /^pmrpc crash-test --app rpc --strategy raw .*--ddio on/);
  const again = run(...cmd.split(' ').slice(2), '--json');
  t.equal(again.status, 1, 'the printed command reproduces a violation');
  t.ok((JSON.parse(again.stdout) as { violations: unknown[] }).violations.length > 0);
  const mutant = run('--strategy', 'farm', '--mutant', 'reply-before-apply', '--requests', '9', '--ddio', 'on', '--seed', '2', '--no-nested');
  t.equal(mutant.status, 1);
  t.match(mutant.stdout, /VIOLATION at crash point \d+/);
  t.match(mutant.stdout, /reproduce: pmrpc crash-test --app rpc --strategy farm .*--mutant reply-before-apply .*--point \d+/);
});

t.test('--help states the exit status; bad options are refused', async (t) => {
  const h = run('--help');
  t.match(h.stdout, /Exit status: 0 when no violation was found, 1 when violations were found/);
  const bad = run('--ddio', 'maybe');
  t.equal(bad.status, 1);
  t.match(bad.stderr, /--ddio must be on or off, got maybe/);
  const unknown = run('--mutant', 'nope');
  t.equal(unknown.status, 1);
  t.match(unknown.stderr, /unknown mutant nope/);
});
