// A picture of a violation (issue 10 item 7): a KV mutant's violations carry the timeline of their
// shortest failing history; written, each page holds the lanes, the crash line and the replay
// command. The RPC app draws its requests (call → durable acknowledgement) per client.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exploreSeed, writeViolationTimelines, type PicturedViolation } from '../../src/testing/crash/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/crash/timeline.test.ts)`);
const dir = mkdtempSync(join(tmpdir(), 'pmrpc-timeline-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test('KV mutant dropIndexFlush: lost and non-linearizable histories drawn with their crash line', async (t) => {
  // Seed 2 with DDIO on catches it at once (test/apps/kv/mutants.test.ts); another PMRPC_SEED tries its own.
  const seed = SEED === 1 ? 2 : SEED;
  const r = await exploreSeed({ app: 'kv', workload: { mutant: 'dropIndexFlush' }, explore: { pins: { ddio: true }, imagesPerPoint: 2, nested: false, violationsMax: 4 } }, seed);
  t.ok(r.violations.length > 0, `${r.violations.length} violations`);
  const drawn = (r.violations as PicturedViolation[]).filter((v) => v.timeline !== undefined);
  t.equal(drawn.length, r.violations.filter((v) => v.kind === 'lost' || v.kind === 'linearizability').length, 'every lost or linearizability violation has a timeline');
  const paths = writeViolationTimelines(r.violations, dir, 4, () => seed);
  t.ok(paths.size > 0, `${paths.size} pages`);
  for (const [i, path] of paths) {
    const html = readFileSync(path, 'utf8');
    const v = r.violations[i]!;
    t.match(html, /^<!doctype html>/i, 'a whole page');
    t.match(html, /<svg /, 'an inline picture');
    t.match(html, /client \d/, 'a client lane');
    t.match(html, /after recovery/, 'the lane of the reads after recovery');
    t.match(html, new RegExp(`crash: point ${v.point}`), 'the crash line, named by its crash point');
    t.ok(html.includes(v.replay), 'the replay command');
    t.notMatch(html, /<script|\ssrc=|<link|@import/, 'self-contained: no script, no external asset');
  }
  const lin = drawn.find((v) => v.kind === 'linearizability');
  if (lin !== undefined) t.ok(lin.timeline!.operations.length <= 6, `the shortest failing history: ${lin.timeline!.operations.length} operations`);
});

t.test('RPC raw with DDIO: the lost request is red among its client lanes', async (t) => {
  const r = await exploreSeed({ app: 'rpc', workload: { strategy: 'raw', requests: 9 }, explore: { pins: { ddio: true }, imagesPerPoint: 2, nested: false, violationsMax: 1 } }, SEED);
  const v = r.violations[0];
  t.ok(v?.timeline !== undefined, 'a timeline');
  const ops = v!.timeline!.operations;
  t.ok(ops.some((o) => o.highlight && o.ret !== undefined), 'an acknowledged request named by the checker');
  t.equal(v!.timeline!.crashes.length, 1);
  t.ok(ops.every((o) => o.call < v!.timeline!.crashes[0]!.time), 'only requests called before the crash');
});
