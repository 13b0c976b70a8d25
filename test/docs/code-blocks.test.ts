// The code blocks of README.md and docs/*.md run (the kinds: test/docs/blocks.ts, README.md
// "Code blocks in the docs"). Every `ts` block is compiled — all in one tsc run, under the
// project's tsconfig (strict), with 'pmrpc' resolved to this checkout — and run to completion in a
// directory of its own within RUN_BOUND_MS; every `sh run` block runs in bash with `pmrpc` the
// checkout's dist/cli/main.js; every `json` block parses. dist/ is built by pretest.
import t from 'tap';
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KINDS, ROOT, RUN_BOUND_MS, allBlocks, docFiles, parseBlocks, type Block, type Kind } from './blocks.js';

const MAIN = join(ROOT, 'dist/cli/main.js');
if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) first`);

const blocks = allBlocks();
/** A block's kind; no info string is text. */
const kindOf = (b: Block): Kind | undefined => {
  const info = b.info === '' ? 'text' : b.info.replace(/\s+/g, ' ');
  return (KINDS as readonly string[]).includes(info) ? (info as Kind) : undefined;
};
const where = (b: Block): string => `${b.file}:${b.line}`;
const slug = (b: Block): string => `${b.file.replace(/[^a-z0-9]+/gi, '-')}-${b.line}`;

interface Run {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}
function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env, timeout = RUN_BOUND_MS): Promise<Run> {
  return new Promise((res) => {
    execFile(cmd, args, { cwd, env, timeout, killSignal: 'SIGKILL', maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      const e = err as (Error & { code?: unknown; signal?: string | null }) | null;
      res({ code: e === null ? 0 : typeof e.code === 'number' ? e.code : null, signal: e?.signal ?? null, stdout, stderr });
    });
  });
}

/** Runs fn over items, `n` at a time. */
async function pool<T>(items: T[], n: number, fn: (x: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(Array.from({ length: n }, async () => {
    for (let x = queue.shift(); x !== undefined; x = queue.shift()) await fn(x);
  }));
}

t.test('every block says what it is, and every fence closes', async (t) => {
  t.ok(blocks.length >= 40, `${blocks.length} blocks in ${docFiles().length} files`);
  const bad = blocks.filter((b) => kindOf(b) === undefined).map((b) => `${where(b)}: info string '${b.info}' (one of: ${KINDS.join(', ')})`);
  t.same(bad, [], 'blocks without a known info string');
  const unclosed = docFiles().flatMap((f) => parseBlocks(f, readFileSync(join(ROOT, f), 'utf8')).unclosed.map((l) => `${f}:${l}`));
  t.same(unclosed, [], 'fences that never close');
});

t.test('json blocks parse', async (t) => {
  for (const b of blocks.filter((x) => kindOf(x) === 'json')) {
    t.doesNotThrow(() => JSON.parse(b.body), where(b));
  }
});

t.test('ts blocks compile under strict and run to completion', async (t) => {
  const ts = blocks.filter((b) => kindOf(b) === 'ts');
  t.ok(ts.length >= 4, `${ts.length} ts blocks`);
  // A project of its own that sees this checkout as the installed package 'pmrpc' and its
  // dependencies as its own (piscina, …): node_modules/pmrpc → the checkout.
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-docs-ts-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const nm = join(dir, 'node_modules');
  mkdirSync(nm);
  for (const e of readdirSync(join(ROOT, 'node_modules'))) if (e !== 'pmrpc' && !e.startsWith('.')) symlinkSync(join(ROOT, 'node_modules', e), join(nm, e));
  symlinkSync(ROOT, join(nm, 'pmrpc'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'pmrpc-docs', private: true, type: 'module' }));
  mkdirSync(join(dir, 'src'));
  for (const b of ts) writeFileSync(join(dir, 'src', `${slug(b)}.ts`), `${b.body}\n`);
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
    extends: join(ROOT, 'tsconfig.json'),
    compilerOptions: { rootDir: 'src', outDir: 'out', declaration: false, sourceMap: false, typeRoots: [join(nm, '@types')] },
    include: ['src'],
  }));
  // One tsc for all (bounded generously: the project's declarations load on a loaded machine).
  const tsc = await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(dir, 'tsconfig.json')], dir, process.env, 240_000);
  // Name each block in the compiler's messages.
  const errors = tsc.stdout.replace(/src\/([\w-]+)\.ts\((\d+),\d+\)/g, (_m, s: string, l: string) => {
    const b = ts.find((x) => slug(x) === s);
    return b === undefined ? _m : `${b.file}:${b.line + Number(l)}`;
  });
  t.equal(tsc.code, 0, `tsc (strict) over the ts blocks (code ${tsc.code}, signal ${tsc.signal}):\n${errors}${tsc.stderr}`);
  if (tsc.code !== 0) return;
  await pool(ts, 2, async (b) => {
    const cwd = join(dir, 'run', slug(b));
    mkdirSync(cwd, { recursive: true });
    const t0 = Date.now(); // reported, not asserted on
    const r = await run(process.execPath, [join(dir, 'out', `${slug(b)}.js`)], cwd);
    t.equal(r.code, 0, `${where(b)} runs to completion within ${RUN_BOUND_MS / 1000} s: ${((Date.now() - t0) / 1000).toFixed(1)} s (code ${r.code}, signal ${r.signal})${r.stderr ? `: ${r.stderr.slice(0, 2000)}` : ''}`);
  });
});

t.test('sh run blocks run', async (t) => {
  const sh = blocks.filter((b) => kindOf(b) === 'sh run');
  t.ok(sh.length >= 1, `${sh.length} sh run blocks`);
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-docs-sh-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // `pmrpc` on the PATH: this checkout's CLI.
  mkdirSync(join(dir, 'bin'));
  writeFileSync(join(dir, 'bin', 'pmrpc'), `#!/bin/sh\nexec "${process.execPath}" "${MAIN}" "$@"\n`);
  chmodSync(join(dir, 'bin', 'pmrpc'), 0o755);
  const env = { ...process.env, PATH: `${join(dir, 'bin')}:${process.env.PATH ?? ''}` };
  await pool(sh, 2, async (b) => {
    const cwd = join(dir, slug(b));
    mkdirSync(cwd);
    const r = await run('bash', ['-euo', 'pipefail', '-c', b.body], cwd, env);
    t.equal(r.code, 0, `${where(b)} exits 0 within ${RUN_BOUND_MS / 1000} s (code ${r.code}, signal ${r.signal})${r.stderr ? `: ${r.stderr.slice(0, 2000)}` : ''}`);
  });
});
