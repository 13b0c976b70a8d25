/**
 * `pmrpc crash-test`: simulated crashes of an app on the one crash explorer (src/testing/crash,
 * DESIGN §8). This module parses options, measures time (the CLI may read the real clock), shows
 * progress on a terminal and prints the one report shape.
 */
import type { Command } from 'commander';
import { systemClock } from '../pmem/index.js';
import { RPC_STRATEGIES } from '../src/rpc/index.js';
import { KV_SYSTEMS } from '../src/node/index.js';
import { crashApp, crashAppHelp, CRASH_APPS, CRASH_APP_NAMES, exploreExhaustive, listApps, mutantName, parseSchedule, resolveSchedule, type CrashApp, type ScheduleOptions } from '../src/testing/crash/index.js';
import { DRAIN_CHOICES, parseSeedRange, resolveExploreOptions, RS_IMAGES_PER_POINT, sweep, type DrainChoice, type NicPins, type PicturedViolation, writeViolationTimelines } from '../src/testing/crash/index.js';
import type { CountedReport } from '../src/testing/crash/index.js';
import { allCaught, formatMutants, mutantTargets, runMutants, type MutantResult } from '../src/testing/crash/index.js';
import { badOption, checkOptions, CliErrorCodes, EXIT_MUTANT_NOT_CAUGHT, intOption, log, onInterrupt, printJson, progressBar, report } from './output.js';

interface Opts {
  app: string;
  strategy: string;
  system: string;
  ddio?: string;
  drain?: string;
  placement?: string;
  seed: number;
  seeds?: string;
  jobs?: number;
  nodes?: number;
  requests?: number;
  clients?: number;
  churn?: number;
  batch?: number;
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
  registers?: number;
  pattern?: string;
  crashRuns?: number;
  crashPlan?: string;
  exhaustive?: boolean;
  statesMax?: number;
  por: boolean;
  schedule?: string;
  pctDepth?: number;
  scheduleHorizon?: number;
  stalls?: number;
  stallSteps?: number;
  stallUnit?: string;
  stallOn?: string;
  lineModel?: string;
  timeline?: string;
  workload?: string;
  keys?: number;
  agent: boolean;
  mutants?: string;
  plain?: boolean;
  damageTombstone?: boolean;
}

/** Default images per crash point of --app rs (the crash-test registry's, src/testing/crash/apps.ts). */
export { RS_IMAGES_PER_POINT };

/** Violations drawn with --timeline. */
export const TIMELINES_MAX = 5;

/** The apps of --app (the crash-test registry, src/testing/crash/apps.ts). */
export const CRASH_TEST_APPS: readonly string[] = CRASH_APP_NAMES;

/**
 * The lines of `--list-mutants` for an app: name<TAB>what it is caught under (rpc, kv: the
 * strategies, 'none' for an equivalent mutant (Mutant.equivalent); register, recovery, rs, rslock,
 * tx: the persistence step it removes) — MutantEntry.listed.
 */
export function mutantLines(app: string): string[] {
  return crashApp(app).mutants.map((m) => `${m.name}\t${m.listed}`);
}

/** The names of the apps a predicate holds for, as "a, b or c". */
function appsWhere(p: (a: CrashApp) => boolean): string {
  return listApps(CRASH_APPS.filter(p).map((a) => a.name));
}

export function registerCrashTest(program: Command): void {
  program
    .command('crash-test')
    .description('crash-test an app (durable RPC; PRISM-KV, the register or recovery/ alone with --app) on the crash explorer: crash at every crash point of a seeded workload (every media event and every delivery to a client), recover every image under a NIC configuration drawn per seed, check that nothing acknowledged is lost, applied twice or un-linearizable')
    .option('--app <name>', crashAppHelp(), CRASH_APP_NAMES[0])
    .option('--strategy <name>', `rpc: one of ${RPC_STRATEGIES.join(', ')}`, 'wflush')
    .option('--system <name>', `kv: ${KV_SYSTEMS.map((x) => `'${x}'`).join(' or ')} (the baseline)`, KV_SYSTEMS[0])
    .option('--ddio <on|off>', 'pin DDIO of the emulated NIC (default: drawn per seed)')
    .option('--drain <policy>', `pin the NIC drain policy: one of ${DRAIN_CHOICES.join(', ')} (default: drawn per seed)`)
    .option('--placement <order>', "pin the placement order: 'any' or 'ascending' (default: drawn per seed)")
    .option('--seed <n>', 'seed of the workload, the scheduling, the NIC configuration and the images', intOption('seed'), 1)
    .option('--seeds <A..B>', 'a sweep over seeds A..B (each its own NIC configuration); reports merge by seed')
    .option('--jobs <n>', 'worker threads for a sweep (piscina)', intOption('jobs'))
    .option('--nodes <n>', 'rpc: server nodes, each with its own clients (default 1)', intOption('nodes'))
    .option('--requests <n>', 'rpc: requests in all (default 64); recovery: requests per client (default 12)', intOption('requests'))
    .option('--clients <n>', 'clients (default 3)', intOption('clients'))
    .option('--churn <n>', 'recovery: clients that leave (release their slot) for new ones (default 0)', intOption('churn'))
    .option('--batch <n>', 'recovery: most entries a client places per acknowledgement (default 3)', intOption('batch'))
    .option('--images-per-point <n>', 'crash images per crash point (default 4)', intOption('images-per-point'))
    .option('--engine <random|exhaustive>', 'image engine: seeded random images, or every image of each state (bounded)', 'random')
    .option('--points-max <n>', 'most crash points checked; beyond it they are sampled (default 2000)', intOption('points-max'))
    .option('--point <n>', "check only this crash point (what a violation's command names)", intOption('point'))
    .option('--resume-every <n>', 'rpc: reconnect the clients after recovery on every n-th image (default 1; 0 = never)', intOption('resume-every'))
    .option('--eviction <p>', 'pin the probability per store of an unasked write-back of a dirty line (default: drawn per seed)', (v: string) => {
      const n = Number(v);
      if (!(n >= 0 && n <= 1)) throw badOption(`--eviction must be a probability in [0, 1], got ${v}`);
      return n;
    })
    .option('--line-model <prefix|subset>', "pin what a crash leaves of a dirty CPU line: an in-order 'prefix' of its pending words, or any 'subset' (a real kill) (default: drawn per seed)")
    .option('--no-nested', 'do not crash each image once more during its recovery')
    .option('--registers <n>', 'register: registers (default 1)', intOption('registers'))
    .option('--pattern <p>', "register: 'mixed' (default) or 'writer-reader' (client 0 writes, the others read)")
    .option('--crash-runs <n>', `${CRASH_APPS.filter((a) => a.crashRuns).map((a) => a.name).join(', ')}: also n seeded crash runs — node subsets (f=1, all at once) and clients crash mid-run, nodes restart from an image while the cluster goes on (kv, rs: connections also drop while the server is up); the whole history is judged`, intOption('crash-runs'))
    .option('--crash-plan <plan>', "register, kv: replay one crash run, e.g. 'p40:n1@2/r12;p95:c1' (what a crash-run violation's command names)")
    .option('--exhaustive', 'small-scope exhaustive mode: every interleaving (sleep-set POR) and every image at every crash point of a tiny workload (kv: 2 clients x PUT+GET; register: --nodes 2 --requests 1 --pattern writer-reader); drain eager, no eviction')
    .option('--states-max <n>', 'exhaustive: most states (interleavings + crash points + images), past it PMRPC_ERR_TOO_MANY_STATES (default 200000)', intOption('states-max'))
    .option('--no-por', 'exhaustive: no partial-order reduction (the full tree; to measure the reduction)')
    .option('--schedule <s>', "the scheduler of the workload runs: 'mixed' (drawn per seed: random, a client or QP held right after its atomic, or PCT), 'random' (each step uniformly among the runnable agents) or 'pct' (PCT priorities with --pct-depth change points; docs/cli.md#adversarial-schedules) (default: a mutant's own schedule, else mixed); with --exhaustive: replay one interleaving, choice indices separated by '.' (what a violation's command names)")
    .option('--pct-depth <n>', 'pct: priority change points (default 3)', intOption('pct-depth'))
    .option('--schedule-horizon <n>', 'pct, stalls: steps over which change points and stalls are drawn (default 20000)', intOption('schedule-horizon'))
    .option('--stalls <n>', 'hold back a randomly picked agent at n seeded steps, each for up to --stall-steps steps (default 0)', intOption('stalls'))
    .option('--stall-steps <n>', 'the most steps one stall lasts (default 200)', intOption('stall-steps'))
    .option('--stall-unit <qp|client>', "what a stall holds: one QP, or every QP of its client (default client)")
    .option('--stall-on <any|atomic>', "when a stall begins: at its drawn step, or right after the picked agent's next atomic (CAS) (default any)")
    .option('--mutant <name>', 'remove one persistence step (test-only fault switch): the run must then report violations')
    .option('--workload <w>', "tx: 'append' (list-append, default) or 'bank' (transfers and audits)")
    .option('--keys <n>', 'tx: keys over all shards (default 4)', intOption('keys'))
    .option('--no-agent', 'tx: no resolver agent scanning while the clients run (it still runs after restarts, client crashes and at the end)')
    .option('--mutants <all|a,b>', 'the mutant sweep: the plain sweep (--seeds, default 1..24; nothing pinned for a mutant) of every listed mutant of --app (rpc: once per strategy it lists), each until its first violation; exit 1 when one is not caught (docs/cli.md)')
    .option('--plain', "a mutant runs without its own NIC pins, schedule, crash plan or workload (what --mutants runs; its replay commands name it)")
    .option('--damage-tombstone', 'kv: a media error in every crash image before it is recovered — a byte of the first tombstone item the index links goes bad (its key reads as deleted either way), so recovery rejects the slot and gives it a dead item (what the mutant sweep runs)')
    .option('--list-mutants', 'print one line per mutant: name<TAB>comma-separated strategies under which it must be caught (rpc, kv), or the step it removes (the other apps); a renamed mutant\'s former name still works with --mutant and --mutants')
    .option('--timeline <dir>', `write a self-contained HTML timeline of the shortest failing history of each of the first ${TIMELINES_MAX} violations into <dir> (its path is printed beside the replay command; JSON: each violation's "timeline")`)
    .option('--json', 'print exactly one JSON document on stdout: {app, seed, configs, crashPoints, imagesChecked, imagesPerSecond, violations[{kind, detail, replay}], ...}')
    .addHelpText('after', '\nOutput: the report on stdout (progress per crash point on stderr: a bar on a terminal, else a line every few seconds); SIGINT prints the partial summary and the replay line.\nExit status: 0 when no violation was found, 1 when violations were found (with --mutant: the mutant is caught) or on a bad option (PMRPC_ERR_BAD_OPTION), 3 when a --mutant run found none (PMRPC_ERR_MUTANT_NOT_CAUGHT), 130 on SIGINT.')
    .action(async (opts: Opts) => {
      if (!CRASH_TEST_APPS.includes(opts.app)) throw badOption(`--app must be one of ${CRASH_TEST_APPS.join(', ')}, got ${opts.app}`);
      const app = crashApp(opts.app);
      if (opts.listMutants) {
        for (const line of mutantLines(opts.app)) process.stdout.write(`${line}\n`);
        return;
      }
      if (opts.exhaustive && app.exhaustive === undefined) throw badOption(`--exhaustive supports --app ${appsWhere((a) => a.exhaustive !== undefined)}`);
      if (opts.mutants !== undefined) {
        const seeds = parseSeedRange(opts.seeds ?? '1..24');
        const progress = (m: MutantResult, done: number, total: number): void => void (opts.json || log(`[${done}/${total}] ${formatMutants({ app: opts.app, seeds, mutants: [m] })[0]!.split('\n')[0]!}`));
        const system = app.systems !== undefined ? { system: opts.system } : {};
        checkOptions(() => mutantTargets(opts.app, opts.mutants!, system.system)); // an unknown mutant, or one of another --system: PMRPC_ERR_BAD_OPTION
        const r = await runMutants(opts.app, opts.mutants, seeds, { jobs: opts.jobs ?? 1, ...system, onResult: progress });
        if (opts.json) printJson(r);
        else for (const line of formatMutants(r)) report(line);
        if (!allCaught(r)) process.exitCode = EXIT_MUTANT_NOT_CAUGHT;
        return;
      }
      // A former name (an alias) runs the mutant under its name (replay commands name it).
      if (opts.mutant !== undefined) opts.mutant = checkOptions(() => mutantName(app, opts.mutant!, '--mutant'));
      if (opts.exhaustive) {
        await runExhaustive(opts, app);
        return;
      }
      if (opts.ddio !== undefined && opts.ddio !== 'on' && opts.ddio !== 'off') throw badOption(`--ddio must be on or off, got ${opts.ddio}`);
      if (opts.drain !== undefined && !DRAIN_CHOICES.includes(opts.drain as DrainChoice)) throw badOption(`--drain must be one of ${DRAIN_CHOICES.join(', ')}, got ${opts.drain}`);
      if (opts.placement !== undefined && opts.placement !== 'any' && opts.placement !== 'ascending') throw badOption(`--placement must be any or ascending, got ${opts.placement}`);
      if (opts.lineModel !== undefined && opts.lineModel !== 'prefix' && opts.lineModel !== 'subset') throw badOption(`--line-model must be prefix or subset, got ${opts.lineModel}`);
      const pins: NicPins = {
        ...(opts.lineModel !== undefined ? { lineModel: opts.lineModel as 'prefix' | 'subset' } : {}),
        ...(opts.ddio !== undefined ? { ddio: opts.ddio === 'on' } : {}),
        ...(opts.drain !== undefined ? { drain: opts.drain as DrainChoice } : {}),
        ...(opts.placement !== undefined ? { placement: opts.placement as 'any' | 'ascending' } : {}),
        ...(opts.eviction !== undefined ? { eviction: opts.eviction } : {}),
      };
      const given = {
        engine: opts.engine as 'random' | 'exhaustive',
        // rs, tx: one seed checks >= 10,000 images by default (issues 12, 13; tx's defaults: txCrashSpec).
        imagesPerPoint: opts.imagesPerPoint ?? app.imagesPerPoint,
        pointsMax: opts.pointsMax,
        point: opts.point,
        nested: opts.nested,
        pins,
        crashRuns: opts.crashRuns,
        crashPlan: opts.crashPlan,
        // Default: the mixed schedule (a seeded share of stalls and PCT), unless a mutant's own schedule stands.
        schedule: scheduleOf(opts) ?? (opts.mutant === undefined || opts.plain === true ? { mode: 'mixed' as const } : undefined),
        plain: opts.plain === true,
      };
      const exploreOptions = checkOptions(() => resolveExploreOptions(given));
      if ((opts.crashRuns !== undefined || opts.crashPlan !== undefined) && !app.crashRuns) throw badOption(`--crash-runs and --crash-plan need --app ${CRASH_APPS.filter((a) => a.crashRuns).map((a) => a.name).join(', ')} (an app with a whole-history check)`);
      if (opts.damageTombstone === true && !app.mediaDamage) throw badOption(`--damage-tombstone needs --app ${appsWhere((a) => a.mediaDamage)}`);
      // The workload options' own checks (resolve*Workload): a bad value is PMRPC_ERR_BAD_OPTION.
      const spec = checkOptions(() => app.spec(opts, given));
      checkOptions(() => app.explorerApp(spec.workload)); // the app's own checks (counts in range), before any work
      const seeds = opts.seeds !== undefined ? checkOptions(() => parseSeedRange(opts.seeds!)) : [opts.seed];
      const bar = opts.json ? { update() {}, stop() {} } : progressBar('crash-test');
      const header = opts.json ? undefined : `pmrpc crash-test --app ${opts.app}: seeds ${seeds.length === 1 ? seeds[0] : `${seeds[0]}..${seeds[seeds.length - 1]}`}${app.header?.(opts) ?? ''}, engine ${opts.engine}${opts.mutant ? `, mutant ${opts.mutant}` : ''}`;
      // What SIGINT prints: the seeds done, where the current one is, and the replay line.
      const done: CountedReport[] = [];
      let current: { seed: number; pointsDone: number; points: number; imagesChecked: number } | undefined;
      const partial = (): string[] => {
        const violations = done.flatMap((x) => x.violations);
        const head = {
          interrupted: true, app: opts.app, seeds, seedsDone: done.map((x) => x.seed).sort((a, b) => a - b), current: current ?? null,
          crashPoints: done.reduce((a, x) => a + x.crashPoints, 0), imagesChecked: done.reduce((a, x) => a + x.imagesChecked, 0), violationsTotal: violations.length,
          violations: violations.slice(0, 20).map(({ kind, detail, replay, point }) => ({ kind, detail, replay, point })), replay: replayOf(),
        };
        if (opts.json) return [JSON.stringify(head, null, 2)];
        return [
          `interrupted (SIGINT): ${done.length} of ${seeds.length} seed${seeds.length === 1 ? '' : 's'} done (${head.crashPoints} crash points, ${head.imagesChecked} images)${current !== undefined && !head.seedsDone.includes(current.seed) ? `; seed ${current.seed} stopped at crash point ${current.pointsDone} of ${current.points} (${current.imagesChecked} images)` : ''}`,
          ...head.violations.map((v) => `VIOLATION at crash point ${v.point} (${v.kind}): ${v.detail}\n  reproduce: ${v.replay}`),
          `${violations.length} violation${violations.length === 1 ? '' : 's'} in the seeds done`,
          `replay: ${head.replay}`,
        ];
      };
      const r = await onInterrupt(partial, async () => {
        try {
          return await sweep(spec, seeds, {
            jobs: opts.jobs ?? 1,
            clock: systemClock,
            onSeed: (x, n, total) => {
              done.push(x);
              bar.update(n, total, `seeds done, seed ${x.seed}: ${x.imagesChecked} images`);
            },
            // Per crash point (in-process runs): the points of the seed being explored.
            onProgress: (seed, p) => {
              current = { seed, ...p };
              bar.update(p.pointsDone, p.points, `crash points of seed ${seed}${seeds.length > 1 ? ` (${done.length}/${seeds.length} seeds done)` : ''}, ${p.imagesChecked} images`);
            },
          });
        } finally {
          bar.stop();
        }
      }, header);
      const paths = opts.timeline !== undefined ? writeViolationTimelines(r.violations, opts.timeline, TIMELINES_MAX, (v) => (v.timeline?.seed as number | undefined) ?? r.seed) : new Map<number, string>();
      const violations = (r.violations as PicturedViolation[]).slice(0, 20).map(({ timeline: _t, ...v }, i) => (paths.has(i) ? { ...v, timeline: paths.get(i)! } : v));
      const caught = r.violations.length > 0;
      if (opts.json) {
        printJson({
          app: r.app, seed: r.seed, ...(seeds.length > 1 ? { seeds } : {}), ...(app.jsonFields?.(opts) ?? {}), mutant: opts.mutant ?? null, ...(opts.mutant !== undefined ? { caught } : {}),
          configs: r.configs, schedule: r.schedule ?? 'random', crashPoints: r.crashPoints, crashPointsTotal: r.crashPointsTotal, deliveryPoints: r.deliveryPoints, imagesChecked: r.imagesChecked, distinctImages: r.distinctImages,
          nestedImagesChecked: r.nestedImagesChecked, ...(r.crashRunsChecked !== undefined ? { crashRunsChecked: r.crashRunsChecked } : {}), sampledPoints: r.sampledPoints, imagesPerSecond: r.imagesPerSecond, seconds: Number(r.seconds.toFixed(3)),
          violations, violationsTotal: r.violations.length,
        });
      } else {
        report(`${r.crashPoints} of ${r.crashPointsTotal} crash points (${r.deliveryPoints} at deliveries), ${r.imagesChecked} images (${r.distinctImages} distinct (crash point, image) pairs; + ${r.nestedImagesChecked} crashed again during recovery), ${r.imagesPerSecond} images/s, ${r.seconds.toFixed(1)} s; NIC configurations: ${r.configs.join(', ')}; schedule: ${r.schedule ?? 'random'}`);
        for (const v of violations) report(`VIOLATION at crash point ${v.point} (${v.kind})${v.image === undefined ? '' : `, image ${v.image}`}: ${v.detail}\n  reproduce: ${v.replay}${'timeline' in v ? `\n  timeline: ${v.timeline}` : ''}`);
        report(`${r.violations.length} violation${r.violations.length === 1 ? '' : 's'}${r.violations.length > violations.length ? ` (first ${violations.length} shown)` : ''}`);
      }
      finish(opts, caught, `seed${seeds.length === 1 ? ` ${seeds[0]}` : `s ${seeds[0]}..${seeds[seeds.length - 1]}`} (NIC configurations: ${r.configs.join(', ')})`);
    });
}

/**
 * The exit status and its last word: 1 with violations; with --mutant and none, the mutant was
 * not caught: said on stdout (the report) and as a coded line on stderr, exit 3.
 */
function finish(opts: Opts, violated: boolean, what: string): void {
  if (violated) process.exitCode = 1;
  else if (opts.mutant !== undefined) {
    if (!opts.json) report(`mutant ${opts.mutant} NOT CAUGHT`);
    log(`pmrpc: ${CliErrorCodes.MUTANT_NOT_CAUGHT}: mutant ${opts.mutant} of --app ${opts.app} was not caught by ${what}: this run cannot show it; try other seeds (--seeds A..B), --images-per-point, or the pins of docs/cli.md`);
    process.exitCode = EXIT_MUTANT_NOT_CAUGHT;
  }
}

/** This run's command line, to replay it (arguments quoted for a POSIX shell where needed). */
function replayOf(): string {
  return ['pmrpc', ...process.argv.slice(2).map((a) => (/^[\w./:=@,+-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`))].join(' ');
}

/** The --schedule, --pct-depth, --stall-* flags (undefined when none is given: the mutant's own schedule, else random). */
function scheduleOf(opts: Opts): Partial<ScheduleOptions> | undefined {
  const given = [opts.schedule, opts.pctDepth, opts.scheduleHorizon, opts.stalls, opts.stallSteps, opts.stallUnit, opts.stallOn].some((x) => x !== undefined);
  if (!given) return undefined;
  if (opts.schedule !== undefined && opts.schedule !== 'random' && opts.schedule !== 'pct' && opts.schedule !== 'mixed') throw badOption(`--schedule must be mixed, random or pct (an interleaving only with --exhaustive), got ${opts.schedule}`);
  if (opts.stallUnit !== undefined && opts.stallUnit !== 'qp' && opts.stallUnit !== 'client') throw badOption(`--stall-unit must be qp or client, got ${opts.stallUnit}`);
  if (opts.stallOn !== undefined && opts.stallOn !== 'any' && opts.stallOn !== 'atomic') throw badOption(`--stall-on must be any or atomic, got ${opts.stallOn}`);
  return resolveSchedule({
    ...(opts.schedule !== undefined ? { mode: opts.schedule as 'random' | 'pct' | 'mixed' } : opts.pctDepth !== undefined ? { mode: 'pct' as const } : {}),
    ...(opts.pctDepth !== undefined ? { depth: opts.pctDepth } : {}),
    ...(opts.scheduleHorizon !== undefined ? { horizon: opts.scheduleHorizon } : {}),
    ...(opts.stalls !== undefined ? { stalls: opts.stalls } : {}),
    ...(opts.stallSteps !== undefined ? { stallSteps: opts.stallSteps } : {}),
    ...(opts.stallUnit !== undefined ? { stallUnit: opts.stallUnit as 'qp' | 'client' } : {}),
    ...(opts.stallOn !== undefined ? { stallOn: opts.stallOn as 'any' | 'atomic' } : {}),
  });
}

/** `--exhaustive`: the small-scope exhaustive mode on a tiny workload (one JSON document with --json). */
async function runExhaustive(opts: Opts, app: CrashApp): Promise<void> {
  if (app.exhaustive === undefined) throw badOption(`--exhaustive supports --app ${appsWhere((a) => a.exhaustive !== undefined)}`);
  if (opts.ddio !== undefined && opts.ddio !== 'on' && opts.ddio !== 'off') throw badOption(`--ddio must be on or off, got ${opts.ddio}`);
  if (opts.placement !== undefined && opts.placement !== 'any' && opts.placement !== 'ascending') throw badOption(`--placement must be any or ascending, got ${opts.placement}`);
  const makeApp = checkOptions(() => app.exhaustive!(opts));
  const pins: NicPins = {
    ...(opts.ddio !== undefined ? { ddio: opts.ddio === 'on' } : {}),
    ...(opts.placement !== undefined ? { placement: opts.placement as 'any' | 'ascending' } : {}),
  };
  if (!opts.json) report(`pmrpc crash-test --app ${opts.app} --exhaustive: seed ${opts.seed}, POR ${opts.por ? 'on (sleep sets)' : 'off'}${opts.mutant ? `, mutant ${opts.mutant}` : ''}`);
  const r = await exploreExhaustive(makeApp, { seed: opts.seed, statesMax: opts.statesMax, por: opts.por, pins, schedule: opts.schedule !== undefined ? parseSchedule(opts.schedule) : undefined, clock: systemClock });
  if (opts.json) {
    printJson({ app: r.app, seed: r.seed, mutant: opts.mutant ?? null, ...(opts.mutant !== undefined ? { caught: r.violations.length > 0 } : {}), exhaustive: true, configs: r.configs, por: r.por, statesExplored: r.statesExplored, sleepBlocked: r.sleepBlocked, maxDepth: r.maxDepth, complete: r.complete, seconds: Number(r.seconds.toFixed(3)), violations: r.violations });
  } else {
    const s = r.statesExplored;
    report(`${s.interleavings} interleavings (${r.sleepBlocked} cut asleep), ${s.crashPoints} crash points, ${s.images} image tuples: ${s.total} states, ${r.complete ? 'complete' : 'stopped early'}, ${r.seconds.toFixed(1)} s; NIC configuration: ${r.configs.join(', ')}`);
    for (const v of r.violations) report(`VIOLATION at crash point ${v.point} (${v.kind}): ${v.detail}\n  reproduce: ${v.replay}`);
    report(`${r.violations.length} violation${r.violations.length === 1 ? '' : 's'}`);
  }
  finish(opts, r.violations.length > 0, `the exhaustive search of seed ${opts.seed}`);
}
