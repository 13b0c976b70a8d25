/**
 * `pmrpc crash-test`: simulated crashes of the durable RPC stack (DESIGN §8). The engine is
 * src/crash; this module parses options, measures time (the CLI may read the real clock), shows
 * progress on a terminal and prints the report.
 */
import type { Command } from 'commander';
import { wallClockMs } from '../pmem/index.js';
import { MUTANTS, resolveCrashTestOptions, runCrashTest, type CrashTestResult } from '../src/crash/index.js';
import { RPC_STRATEGIES, type RpcStrategy } from '../src/rpc/index.js';
import { KV_MUTANTS, runKvCrashTest, type KvFaultName } from '../src/apps/kv/index.js';
import { intOption, log, printJson, progressBar } from './output.js';

interface Opts {
  app: string;
  strategy: string;
  ddio: string;
  seed: number;
  requests?: number;
  clients?: number;
  imagesPerPoint?: number;
  engine: string;
  mutant?: string;
  listMutants?: boolean;
  point?: number;
  pointsMax?: number;
  json?: boolean;
  nested: boolean;
  resumeEvery?: number;
  eviction?: number;
}

export function registerCrashTest(program: Command): void {
  program
    .command('crash-test')
    .description('crash-test durable RPC (or, with --app kv, PRISM-KV) in-process: crash at every crash point of a seeded workload, recover every image, check that nothing acknowledged is lost or applied twice')
    .option('--app <name>', "the workload: 'rpc' (durable RPC, per --strategy) or 'kv' (PRISM-KV: put/get/delete chains, allocator recovery, linearizability)", 'rpc')
    .option('--strategy <name>', `one of ${RPC_STRATEGIES.join(', ')}`, 'wflush')
    .option('--ddio <on|off>', 'DDIO of the emulated NIC', 'on')
    .option('--seed <n>', 'seed of the workload, the NIC scheduling and the images', intOption('seed'), 1)
    .option('--requests <n>', 'requests in all (default 48)', intOption('requests'))
    .option('--clients <n>', 'clients (default 3)', intOption('clients'))
    .option('--images-per-point <n>', 'crash images per crash point (default 4)', intOption('images-per-point'))
    .option('--engine <random|exhaustive>', 'image engine: seeded random images, or every image of each state (bounded)', 'random')
    .option('--points-max <n>', 'most crash points checked; beyond it they are sampled (default 2000)', intOption('points-max'))
    .option('--point <n>', 'check only this crash point (what a violation\'s command names)', intOption('point'))
    .option('--resume-every <n>', 'reconnect the clients after recovery on every n-th image (default 1; 0 = never)', intOption('resume-every'))
    .option('--eviction <p>', 'probability per store of an unasked write-back of a dirty line (default 0)', (v: string) => {
      const n = Number(v);
      if (!(n >= 0 && n <= 1)) throw new TypeError(`--eviction must be a probability in [0, 1], got ${v}`);
      return n;
    })
    .option('--no-nested', 'do not crash each image once more during its recovery')
    .option('--mutant <name>', 'remove one persistence step (test-only fault switch): the run must then report violations')
    .option('--list-mutants', 'print one line per mutant: name<TAB>comma-separated strategies under which it must be caught')
    .option('--json', 'print exactly one JSON document on stdout: {strategy, seed, crashPoints, imagesChecked, imagesPerSecond, violations, ...}')
    .addHelpText('after', '\nExit status: 0 when no violation was found, 1 when violations were found (or on bad options).')
    .action(async (opts: Opts) => {
      if (opts.app !== 'rpc' && opts.app !== 'kv') throw new TypeError(`--app must be rpc or kv, got ${opts.app}`);
      if (opts.listMutants) {
        for (const m of opts.app === 'kv' ? KV_MUTANTS : MUTANTS) process.stdout.write(`${m.name}\t${m.strategies.join(',')}\n`);
        return;
      }
      if (opts.ddio !== 'on' && opts.ddio !== 'off') throw new TypeError(`--ddio must be on or off, got ${opts.ddio}`);
      if (opts.app === 'kv') return runKv(opts);
      const bar = opts.json ? { update() {}, stop() {} } : progressBar('crash-test');
      const o = resolveCrashTestOptions({
        strategy: opts.strategy as RpcStrategy,
        ddio: opts.ddio === 'on',
        seed: opts.seed,
        requests: opts.requests,
        clients: opts.clients,
        imagesPerPoint: opts.imagesPerPoint,
        engine: opts.engine as 'random' | 'exhaustive',
        mutant: opts.mutant,
        point: opts.point,
        pointsMax: opts.pointsMax,
        nested: opts.nested,
        resumeEvery: opts.resumeEvery,
        eviction: opts.eviction,
        onProgress: (p) => bar.update(p.pointsDone, p.points, `${p.imagesChecked} images`),
      });
      if (!opts.json) log(`pmrpc crash-test: strategy ${o.strategy}, ddio ${opts.ddio}, seed ${o.seed}, ${o.requests} requests, engine ${o.engine}${o.mutant ? `, mutant ${o.mutant}` : ''}`);
      const t0 = wallClockMs();
      let r: CrashTestResult;
      try {
        r = await runCrashTest(o);
      } finally {
        bar.stop();
      }
      const seconds = Math.max(1e-9, (wallClockMs() - t0) / 1000);
      const imagesPerSecond = Math.round(r.imagesChecked / seconds);
      if (opts.json) {
        printJson({
          strategy: r.strategy, seed: r.seed, crashPoints: r.crashPoints, imagesChecked: r.imagesChecked, imagesPerSecond, violations: r.violations,
          ddio: r.ddio, mutant: r.mutant, requests: r.requests, crashPointsTotal: r.crashPointsTotal, nestedImagesChecked: r.nestedImagesChecked,
          resumesChecked: r.resumesChecked, keptResultsChecked: r.keptResultsChecked, sampledStates: r.sampledStates, acknowledged: r.acknowledged, applied: r.applied, seconds: Number(seconds.toFixed(3)),
        });
      } else {
        log(`seed ${r.seed}: ${r.crashPoints} of ${r.crashPointsTotal} crash points, ${r.imagesChecked} images (+ ${r.nestedImagesChecked} crashed again during recovery, ${r.resumesChecked} resumed), ${imagesPerSecond} images/s, ${r.acknowledged} requests acknowledged, ${r.applied} applied`);
        for (const v of r.violations) log(`VIOLATION at crash point ${v.point} (${v.kind})${v.image === undefined ? '' : `, image ${v.image}`}: ${v.message}\n  reproduce: ${v.command}`);
        log(`${r.violations.length} violation${r.violations.length === 1 ? '' : 's'}${r.violations.length > 0 ? '' : ''} (replay: ${`pmrpc crash-test --strategy ${r.strategy} --ddio ${opts.ddio} --seed ${r.seed}`})`);
      }
      if (r.violations.length > 0) process.exitCode = 1;
    });
}

/** `--app kv`: the PRISM-KV crash engine (src/apps/kv/crash.ts), same reporting conventions. */
async function runKv(opts: Opts): Promise<void> {
  if (opts.engine !== 'random' && opts.engine !== 'exhaustive') throw new TypeError(`--engine must be random or exhaustive, got ${opts.engine}`);
  if (opts.mutant !== undefined && !KV_MUTANTS.some((m) => m.name === opts.mutant)) {
    throw new TypeError(`--mutant must be one of ${KV_MUTANTS.map((m) => m.name).join(', ')}, got ${opts.mutant}`);
  }
  const replay = `pmrpc crash-test --app kv --ddio ${opts.ddio} --seed ${opts.seed} --engine ${opts.engine}${opts.mutant ? ` --mutant ${opts.mutant}` : ''}${opts.imagesPerPoint ? ` --images-per-point ${opts.imagesPerPoint}` : ''}`;
  if (!opts.json) log(`pmrpc crash-test --app kv: ddio ${opts.ddio}, seed ${opts.seed}, engine ${opts.engine}${opts.mutant ? `, mutant ${opts.mutant}` : ''}`);
  const t0 = wallClockMs();
  const r = await runKvCrashTest({
    seed: opts.seed,
    engine: opts.engine,
    ddio: opts.ddio === 'on',
    mutant: opts.mutant as KvFaultName | undefined,
    recoveryCrash: opts.nested,
    stopAfterViolations: 20, // like the rpc engine: enough to diagnose, bounded output
    ...(opts.imagesPerPoint !== undefined ? { imagesPerPoint: opts.imagesPerPoint } : {}),
    ...(opts.clients !== undefined ? { clients: opts.clients } : {}),
    ...(opts.pointsMax !== undefined ? { crashPointsMax: opts.pointsMax } : {}),
  });
  const seconds = Math.max(1e-9, (wallClockMs() - t0) / 1000);
  const imagesPerSecond = Math.round(r.imagesChecked / seconds);
  const violations = r.violations.slice(0, 20).map((v) => ({ ...v, command: replay }));
  if (opts.json) {
    printJson({
      app: 'kv', strategy: 'prism-kv', seed: r.seed, crashPoints: r.crashPoints, imagesChecked: r.imagesChecked, imagesPerSecond, violations, violationsTotal: r.violations.length,
      ddio: opts.ddio === 'on', mutant: r.mutant, engine: r.engine, crashPointsTotal: r.crashPointsTotal, recoveryImagesChecked: r.recoveryImagesChecked,
      exhaustiveImages: r.exhaustiveImages, operations: r.operations, acknowledged: r.acknowledged, violationCounts: r.violationCounts, undecided: r.undecided, seconds: Number(seconds.toFixed(3)),
    });
  } else {
    log(`seed ${r.seed}: ${r.crashPoints} of ${r.crashPointsTotal} crash points, ${r.imagesChecked} images (${r.recoveryImagesChecked} from a crash during recovery, ${r.exhaustiveImages} enumerated exhaustively), ${imagesPerSecond} images/s, ${r.acknowledged} of ${r.operations} operations acknowledged, ${r.undecided} linearizability checks undecided`);
    for (const v of violations.slice(0, 20)) log(`VIOLATION (${v.kind}) at crash point ${v.crashPoint}, image ${v.image} (${v.phase}): ${v.detail}\n  reproduce: ${v.command}`);
    log(`${r.violations.length} violation${r.violations.length === 1 ? '' : 's'}${r.violations.length > violations.length ? ` (first ${violations.length} shown)` : ''} (replay: ${replay})`);
  }
  if (r.violations.length > 0) process.exitCode = 1;
}
