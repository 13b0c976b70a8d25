/**
 * The region's store path stays optimized after a whole-region store (docs/benchmarks.md, "Profile
 * of the real path"): before, V8's on-stack compilation of #afterStore inside its per-line loop
 * left the code after the loop without type feedback, and every later store deoptimized it
 * (thousands of deopts per second in `pmrpc serve`). Counts deopts, not time.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const PMEM_URL = new URL('../../dist/pmem/index.js', import.meta.url);
const FIXTURE = fileURLToPath(new URL('./fixtures/store-deopt.mjs', import.meta.url));
if (!existsSync(fileURLToPath(PMEM_URL))) throw new Error(`${fileURLToPath(PMEM_URL)} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) first`);

t.test('small stores after a whole-region store do not deoptimize the store path again and again', (t) => {
  const out = execFileSync(process.execPath, ['--trace-deopt', FIXTURE, PMEM_URL.href, '50000'], { encoding: 'utf8', maxBuffer: 64 << 20 });
  t.match(out, /done\n/);
  const deopts = out.split('\n').filter((l) => l.includes('deoptimizing') && /#afterStore|markDirty/.test(l));
  // Before the fix: 31–3,548 of them in runs of 20,000 stores (one per store once the loop set in); a few are V8's normal tiering.
  t.ok(deopts.length <= 4, `${deopts.length} deopts of the store path:\n${deopts.slice(0, 3).join('\n')}`);
  t.end();
});
