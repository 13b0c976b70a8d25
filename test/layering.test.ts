// The layering of DESIGN §1, enforced: dependency-cruiser (.dependency-cruiser.cjs) over the
// source floors and the tests must report no violation — no upward import along
// cli → bench → src → recovery → flush → pmem, no import that bypasses a folder's index.ts, no
// cycle. A second test runs the same config on a small fixture tree and checks that each rule fires,
// so the rules cannot go silently dead (a resolver change that resolves nothing passes everything).
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DEPCRUISE = join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
const CONFIG = '.dependency-cruiser.cjs';
const FLOORS = ['pmem', 'flush', 'recovery', 'src', 'bench', 'cli'] as const;

interface CycleStep {
  name: string;
}
interface Violation {
  from: string;
  to: string;
  rule: { name: string; severity: string };
  cycle?: Array<CycleStep | string>;
}
interface CruiseResult {
  modules: Array<{ source: string; dependencies: Array<{ resolved: string }> }>;
  summary: { violations: Violation[]; error: number; warn: number; totalCruised: number; totalDependenciesCruised: number };
}

function cruise(cwd: string, dirs: readonly string[]): CruiseResult {
  const r = spawnSync(process.execPath, [DEPCRUISE, '--config', CONFIG, '--output-type', 'json', ...dirs], {
    cwd,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    timeout: 240_000, // a bound, not a speed: a loaded 2-core machine took over 90 s once
  });
  // depcruise exits with the number of errors; only a missing or unparsable report is a failure to run.
  if (r.error !== undefined || r.stdout.trim() === '') {
    throw new Error(`depcruise did not run (status ${r.status}): ${r.error?.message ?? ''}\n${r.stderr}`);
  }
  return JSON.parse(r.stdout) as CruiseResult;
}

function describe(v: Violation): string {
  const via = v.cycle !== undefined && v.cycle.length > 0 ? ` (cycle: ${[v.from, ...v.cycle.map((s) => (typeof s === 'string' ? s : s.name))].join(' → ')})` : '';
  return `${v.rule.severity} ${v.rule.name}: ${v.from} → ${v.to}${via}`;
}

t.test('the source floors and the tests respect the layering (dependency-cruiser)', async (t) => {
  const result = cruise(ROOT, [...FLOORS, 'test']);
  const violations = result.summary.violations;
  if (violations.length > 0) t.comment(`dependency-cruiser violations:\n${violations.map(describe).join('\n')}`);
  t.same(violations.map(describe), [], 'no dependency violations');
  // The cruise really resolved the TypeScript sources (`.js` specifiers → `.ts` files).
  t.ok(result.summary.totalCruised > 100, `cruised ${result.summary.totalCruised} modules`);
  const server = result.modules.find((m) => m.source === 'src/rpc/server.ts');
  t.ok(server?.dependencies.some((d) => d.resolved === 'recovery/index.ts'), 'src/rpc/server.ts → recovery/index.ts is resolved');
});

t.test('every folder of the library floors below cli/ has an index.ts (its face)', async (t) => {
  const missing: string[] = [];
  const walk = (dir: string): void => {
    const entries = readdirSync(join(ROOT, dir), { withFileTypes: true });
    if (entries.some((e) => e.isFile() && e.name.endsWith('.ts')) && !existsSync(join(ROOT, dir, 'index.ts'))) missing.push(dir);
    for (const e of entries) if (e.isDirectory()) walk(`${dir}/${e.name}`);
  };
  for (const floor of FLOORS) if (floor !== 'cli') walk(floor);
  t.same(missing, [], 'folders with modules but no index.ts');
});

t.test('each rule fires on a fixture tree that breaks it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-layering-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const files: Record<string, string> = {
    'tsconfig.json': JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }),
    'pmem/index.ts': "export * from './a.js';\n",
    'pmem/a.ts': "import { b } from '../src/index.js';\nexport const a = b;\n", // upward: pmem → src
    'flush/index.ts': "import { a } from '../pmem/index.js';\nexport const f = a;\n", // downward: fine
    'src/index.ts': "export const b = 1;\nexport * from './rpc/index.js';\n",
    'src/rpc/index.ts': "export * from './x.js';\n",
    'src/rpc/x.ts': "import { y } from './y.js';\nexport const x = y;\n", // same folder: fine
    'src/rpc/y.ts': 'export const y = 2;\n',
    'src/apps/kv/index.ts': "import { x } from '../../rpc/x.js';\nexport const k = x;\n", // bypasses src/rpc/index.ts
    'src/check/c.ts': "import { d } from './d.js';\nexport const c = 3;\nexport const cd = d;\n", // cycle c ↔ d
    'src/check/d.ts': "import { c } from './c.js';\nexport const d = () => c;\n",
    'src/check/index.ts': "export * from './c.js';\n",
    'test/t.ts': "import { x } from '../src/rpc/x.js';\nexport const tt = x;\n", // tests may bypass faces
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  copyFileSync(join(ROOT, CONFIG), join(dir, CONFIG));
  // A cycle is reported once, from whichever member the cruise met first: name it by its members.
  const found = cruise(dir, ['pmem', 'flush', 'src', 'test']).summary.violations.map((v) =>
    v.rule.name === 'no-circular' ? `no-circular: ${[v.from, v.to].sort().join(' ↔ ')}` : `${v.rule.name}: ${v.from} → ${v.to}`,
  );
  t.same(
    [...found].sort(),
    [
      'bypasses-index: src/apps/kv/index.ts → src/rpc/x.ts',
      'layer-pmem-imports-up: pmem/a.ts → src/index.ts',
      'no-circular: src/check/c.ts ↔ src/check/d.ts',
    ],
    'exactly the planted violations',
  );
});

t.test('the layer graph in docs/architecture.md is the one the code gives (node .ci/depgraph.mjs --check)', async (t) => {
  const r = spawnSync(process.execPath, [join(ROOT, '.ci', 'depgraph.mjs'), '--check'], { cwd: ROOT, encoding: 'utf8', timeout: 240_000 });
  t.equal(r.status, 0, `${r.stdout}${r.stderr} (regenerate: node .ci/depgraph.mjs)`);
});
