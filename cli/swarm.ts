/**
 * `pmrpc swarm`: swarm simulation on the one crash explorer (src/testing/crash/swarm.ts): every seed
 * a new fault schedule over every app, safety checked throughout, then a liveness phase. This
 * module parses options, reads the real clock for the wall time, shows progress and records the
 * run in the SQLite history.
 */
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import type { Command } from 'commander';
import { systemClock, wallClockMs } from '../pmem/index.js';
import { recordRun } from '../bench/index.js';
import { parseSeedRange, resolveSwarmOptions, swarm, SWARM_APPS, SWARM_DEFAULT_SECONDS, SWARM_COST_PROFILE, LIVENESS_STEPS_MAX, LIVENESS_VIRTUAL_US, type SwarmApp } from '../src/testing/crash/index.js';
import { DEFAULT_BENCH_OUT } from './bench.js';
import { badOption, checkOptions, CliErrorCodes, EXIT_MUTANT_NOT_CAUGHT, intOption, log, onInterrupt, printJson, progressBar, report } from './output.js';

interface Opts {
  seeds: string;
  seconds?: string;
  app: string;
  json?: boolean;
  jobs?: number;
  mutant?: string;
  out: string;
  history: boolean;
  crashes: boolean;
}

/** Failures printed in full (the JSON holds every one). */
const FAILURES_SHOWN = 20;

export function registerSwarm(program: Command): void {
  program
    .command('swarm')
    .description(
      `swarm simulation: per seed, fault parameters drawn from the seed (NIC drain policy and bound, DDIO, placement, eviction; node crash rates and restart delays in virtual time, crashes during recovery, all nodes at once; client crashes and dropped connections; message delay and reordering between QPs; paused nodes; BUGGIFY fault sites) over every app, with the crash suites' whole-history checkers; then a liveness phase (faults off, every node up) in which every app must converge and every client finish within ${LIVENESS_VIRTUAL_US / 1e6} virtual s (modelled time, not wall time)`,
    )
    .option('--seeds <A..B>', 'seeds to run (each a new fault schedule)', '1..20')
    .option('--seconds <T>', `virtual seconds of the fault phase per seed and app: modelled time on the ${SWARM_COST_PROFILE} cost model, not wall time (workloads scale with it)`, String(SWARM_DEFAULT_SECONDS))
    .option('--app <name>', `'all' or one of ${SWARM_APPS.join(', ')} (or a comma-separated list)`, 'all')
    .option('--jobs <n>', 'worker threads (piscina)', intOption('jobs'))
    .option('--mutant <APP:NAME>', "a broken build: one app's mutant (e.g. kv:drop-index-flush; see pmrpc crash-test --app APP --list-mutants); the swarm must then fail with a replayable seed")
    .option('--no-crashes', 'no node or client crashes: only the NIC configuration, message delay and reordering, paused nodes and fault sites (to show that a failure needs no crash)')
    .option('--out <dir>', 'append the run to <dir>/history.sqlite', DEFAULT_BENCH_OUT)
    .option('--no-history', 'do not append this run to the SQLite history')
    .option('--json', 'print exactly one JSON document on stdout: {seeds, failures: [{seed, app, replay, violation}], apps, seconds, ...}')
    .addHelpText('after', '\nThe report is on stdout, progress on stderr; SIGINT prints the seeds done, their failures and the replay line (exit 130).\nExit status: 0 when every seed passed, 1 when a seed failed (each failure prints the one-line command that replays it) or on bad options, 3 when a --mutant run failed no seed (PMRPC_ERR_MUTANT_NOT_CAUGHT).')
    .action(async (opts: Opts) => {
      const seeds = checkOptions(() => parseSeedRange(opts.seeds));
      const seconds = Number(opts.seconds);
      if (!(seconds > 0)) throw badOption(`--seconds must be a positive number, got ${String(opts.seconds)}`);
      const apps = (opts.app === 'all' ? [...SWARM_APPS] : opts.app.split(',').map((a) => a.trim())) as SwarmApp[];
      for (const a of apps) if (!SWARM_APPS.includes(a)) throw badOption(`--app must be all or one of ${SWARM_APPS.join(', ')}, got ${opts.app}`);
      checkOptions(() => resolveSwarmOptions({ apps, seconds, mutant: opts.mutant, crashes: opts.crashes })); // e.g. a --mutant that is not APP:NAME
      const command = `pmrpc swarm --seeds ${opts.seeds} --app ${opts.app} --seconds ${seconds}${opts.mutant !== undefined ? ` --mutant ${opts.mutant}` : ''}${opts.crashes ? '' : ' --no-crashes'}`;
      const startedAt = new Date(wallClockMs()).toISOString();
      const t0 = systemClock.nowMs();
      const bar = opts.json ? { update() {}, stop() {} } : progressBar('swarm');
      const header = opts.json ? undefined : `pmrpc swarm: seeds ${opts.seeds}, apps ${apps.join(', ')}, ${seconds} virtual s per seed and app${opts.mutant !== undefined ? `, mutant ${opts.mutant}` : ''}${opts.jobs !== undefined ? `, ${opts.jobs} jobs` : ''}`;
      // SIGINT: the seeds done, their failures and the replay line.
      const done: Array<{ seed: number; failures: Array<{ app: string; replay: string; violation: string }> }> = [];
      const partial = (): string[] => {
        const fs = done.flatMap((x) => x.failures.map((f) => ({ seed: x.seed, app: f.app, replay: f.replay, violation: f.violation })));
        if (opts.json) return [JSON.stringify({ interrupted: true, seeds, seedsDone: done.map((x) => x.seed).sort((a, b) => a - b), failures: fs, replay: command }, null, 2)];
        return [
          `interrupted (SIGINT): ${done.length} of ${seeds.length} seeds done; ${fs.length} failure${fs.length === 1 ? '' : 's'}`,
          ...fs.slice(0, FAILURES_SHOWN).map((f) => `FAILED seed ${f.seed} (${f.app}): ${f.violation}\n  replay: ${f.replay}`),
          `replay: ${command}`,
        ];
      };
      const r = await onInterrupt(partial, async () => {
        try {
          return await swarm(seeds, {
            apps, seconds, mutant: opts.mutant, crashes: opts.crashes, jobs: opts.jobs ?? 1,
            onSeed: (x, n, total) => {
              done.push({ seed: x.seed, failures: x.failures });
              bar.update(n, total, `seed ${x.seed}${x.failures.length > 0 ? ' FAILED' : ''}`);
            },
          });
        } finally {
          bar.stop();
        }
      }, header);
      const wallSeconds = (systemClock.nowMs() - t0) / 1000;
      const failures = r.failures.map(({ seed, app, replay, violation }) => ({ seed, app, replay, violation }));
      let runId: number | undefined;
      if (opts.history) {
        mkdirSync(opts.out, { recursive: true });
        runId = recordRun(
          join(opts.out, 'history.sqlite'),
          {
            suite: 'swarm',
            config: { apps, seconds, mutant: opts.mutant ?? null, crashes: opts.crashes, seeds: opts.seeds, jobs: opts.jobs ?? 1, costProfile: SWARM_COST_PROFILE, livenessVirtualUs: LIVENESS_VIRTUAL_US, livenessStepsMax: LIVENESS_STEPS_MAX },
            rows: r.results.flatMap((s) => s.apps.map((a) => ({ seed: a.seed, app: a.app, config: a.config, plan: a.plan, sites: a.sites, steps: a.steps, faultUs: a.faultUs, virtualUs: a.virtualUs, livenessUs: a.livenessUs, crashPoints: a.crashPoints, events: a.events, failures: a.failures.map((f) => f.violation) }))),
            ratios: { seeds: seeds.length, failures: failures.length, failedSeeds: new Set(failures.map((f) => f.seed)).size, steps: r.steps, virtualSeconds: r.virtualUs / 1e6, crashPoints: r.crashPoints, wallSeconds },
            summary: [],
          },
          { startedAt, seed: seeds[0]!, quick: false, command },
        );
      }
      if (opts.json) {
        printJson({ seeds: r.seeds, failures, apps: r.apps, seconds: r.seconds, mutant: opts.mutant ?? null, steps: r.steps, virtualSeconds: r.virtualUs / 1e6, crashPoints: r.crashPoints, events: r.events, wallSeconds: Number(wallSeconds.toFixed(3)), ...(runId !== undefined ? { runId } : {}) });
      } else {
        for (const f of failures.slice(0, FAILURES_SHOWN)) report(`FAILED seed ${f.seed} (${f.app}): ${f.violation}\n  replay: ${f.replay}`);
        report(`${seeds.length} seeds x ${apps.length} apps: ${r.steps} scheduler steps, ${(r.virtualUs / 1e6).toFixed(4)} virtual s (modelled on ${SWARM_COST_PROFILE}, not measured), ${r.crashPoints} crash points, ${r.events} crash/restart events; ${failures.length} failure${failures.length === 1 ? '' : 's'} in ${new Set(failures.map((f) => f.seed)).size} seeds; ${wallSeconds.toFixed(1)} s wall`);
      }
      if (failures.length > 0) process.exitCode = 1;
      else if (opts.mutant !== undefined) {
        if (!opts.json) report(`mutant ${opts.mutant} NOT CAUGHT`);
        log(`pmrpc: ${CliErrorCodes.MUTANT_NOT_CAUGHT}: mutant ${opts.mutant} was not caught by seeds ${opts.seeds}: try more seeds or --seconds`);
        process.exitCode = EXIT_MUTANT_NOT_CAUGHT;
      }
    });
}
