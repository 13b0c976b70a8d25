// The one real-crash loop (src/server/supervisor.ts runRealCrashApp), on its own with a toy app
// whose processes are `node -e` children: the plan's parts are called in order — processes started
// group by group, the load, a SIGKILL at each step the plan yields, its inspection once the killed
// process restarted, the finish, the teardown, the orderly stop, then the checks — also when a part
// throws; the run's directory is removed unless kept. And every app with a real-crash run supplies
// its part through its crash-test registry record, and src/server/ spells no app name.
import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { systemClock } from '../../pmem/index.js';
import { runRealCrashApp, type RealCrashEntry, type RealCrashRunOptions } from '../../src/server/index.js';
import { CRASH_APPS } from '../../src/testing/crash/index.js';

// A child that prints the start line and then a numbered line every 10 ms until SIGTERM.
const CHILD = "let i=0,h;process.on('SIGTERM',()=>{clearInterval(h);process.exit(0)});console.log(JSON.stringify({port:0,recovered:{}}));h=setInterval(()=>console.log(JSON.stringify({t:'tick',i:i++})),10)";

interface ToyOptions extends RealCrashRunOptions {
  /** Processes per group (two groups). */
  perGroup: number;
  /** Kill steps: each kills process 0, restarted at once. */
  kills: number;
  /** A part that throws ('' none). */
  throwIn: '' | 'load' | 'kills';
}

interface ToyReport {
  calls: string[];
  ends: string[][];
  errors: string[];
  dir: string;
  lines: number;
}

function toyEntry(): RealCrashEntry<ToyOptions, ToyReport> {
  return {
    dirPrefix: 'pmrpc-toy-crash-',
    resolveOptions: (o) => {
      if (o.kills !== undefined && !(Number.isSafeInteger(o.kills) && o.kills >= 0)) throw new RangeError(`kills must be a non-negative integer, got ${String(o.kills)}`);
      return { seed: 1, perGroup: 1, kills: 1, throwIn: '', dir: undefined, keep: false, clock: systemClock, log: undefined, ...o };
    },
    plan: (o) => {
      const calls: string[] = [];
      let lines = 0;
      return {
        nodes: (run) => {
          calls.push('nodes');
          const group = (g: number) => Array.from({ length: o.perGroup }, (_, i) => ({ name: `g${g}n${i}`, pmFile: join(run.dir, `g${g}n${i}`), args: () => ['-e', CHILD], restartsMax: o.kills + 2, onLine: () => void lines++ }));
          return [group(0), group(1)];
        },
        load: async (run) => {
          // Every process of both groups listens before the load starts.
          calls.push(`load:${run.sups.map((s) => (s.serving ? 'up' : 'down')).join(',')}`);
          if (o.throwIn === 'load') throw new Error('load failed');
        },
        kills: async function* (run) {
          for (let i = 0; i < o.kills; i++) {
            await run.wakeup.until(() => lines > 0, 60_000);
            calls.push(`kill${i}`);
            yield { nodes: [0] };
            if (o.throwIn === 'kills') throw new Error('kills failed');
          }
        },
        afterKill: async (step, run) => {
          // The killed process restarted at once: the inspection sees its new incarnation listening.
          await run.sups[step.nodes[0]!]!.up();
          calls.push(`afterKill:gen${run.sups[step.nodes[0]!]!.generation}`);
        },
        finish: async () => {
          calls.push('finish');
        },
        teardown: (run) => {
          calls.push(`teardown:${run.sups.every((s) => s.incarnations.at(-1)?.end === 'failed') ? 'running' : 'stopped'}`);
        },
        check: (run) => {
          calls.push('check');
          return { calls, ends: run.sups.map((s) => s.incarnations.map((r) => r.end)), errors: [...run.errors], dir: run.dir, lines };
        },
      };
    },
  };
}

const MAIN = 'unused';

t.test('the loop calls the parts in order; kills restart; every process stopped in order; the dir removed', async (t) => {
  const r = await runRealCrashApp(toyEntry(), { mainScript: MAIN, perGroup: 2, kills: 2 });
  t.same(r.calls, ['nodes', 'load:up,up,up,up', 'kill0', 'afterKill:gen2', 'kill1', 'afterKill:gen3', 'finish', 'teardown:running', 'check']);
  t.same(r.ends, [['external', 'external', 'stop'], ['stop'], ['stop'], ['stop']], 'process 0 SIGKILLed twice and restarted; every last incarnation stopped in order');
  t.same(r.errors, []);
  t.ok(r.lines > 0, 'lines delivered as they arrive');
  t.notOk(existsSync(r.dir), 'the temp dir is removed');
});

t.test('a part that throws: the error is the run\'s, teardown, stop and checks still run; keep keeps the dir', async (t) => {
  const r = await runRealCrashApp(toyEntry(), { mainScript: MAIN, kills: 2, throwIn: 'kills', keep: true });
  t.same(r.calls, ['nodes', 'load:up,up', 'kill0', 'afterKill:gen2', 'teardown:running', 'check']);
  t.same(r.errors, ['kills failed']);
  t.same(r.ends, [['external', 'stop'], ['stop']]);
  t.ok(existsSync(r.dir), 'kept');
  const l = await runRealCrashApp(toyEntry(), { mainScript: MAIN, throwIn: 'load' });
  t.same(l.calls, ['nodes', 'load:up,up', 'teardown:running', 'check'], 'no kill after a failed load');
  t.same(l.errors, ['load failed']);
});

t.test('a bad option is refused before any process starts', async (t) => {
  await t.rejects(runRealCrashApp(toyEntry(), { mainScript: MAIN, kills: -1 }), RangeError);
});

t.test('every app with a real-crash run supplies its part through its registry record, whose options it checks', async (t) => {
  const withRuns = CRASH_APPS.filter((a) => a.realCrash !== undefined);
  t.same(withRuns.map((a) => a.name), ['rpc', 'kv', 'rs', 'tx']);
  for (const a of withRuns) {
    const e = a.realCrash!;
    const o = e.resolveOptions({ mainScript: MAIN });
    t.equal(o.mainScript, MAIN, `${a.name}: defaults`);
    t.equal(o.seed, 1, `${a.name}: the default seed`);
    t.throws(() => e.resolveOptions({ mainScript: MAIN, seed: 0.5 }), RangeError, `${a.name}: a bad seed`);
  }
  t.equal(new Set(withRuns.map((x) => x.realCrash!.dirPrefix)).size, withRuns.length, 'each its own temp dir prefix');
});

t.test('src/server/ spells no app name (the apps supply their parts through the registry)', async (t) => {
  const NAMES = ['rpc', 'kv', 'pilaf', 'prism', 'rs', 'rslock', 'tx', 'txfarm', 'txford', 'txlock', 'register', 'recovery'];
  const literal = new RegExp(`(['"\`])(${NAMES.join('|')})\\1`);
  const dir = new URL('../../src/server/', import.meta.url).pathname;
  const stray: string[] = [];
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.ts'))) {
    readFileSync(join(dir, f), 'utf8').split('\n').forEach((line, i) => {
      if (literal.test(line)) stray.push(`src/server/${f}:${i + 1}: ${line.trim()}`);
    });
  }
  t.same(stray, []);
});
