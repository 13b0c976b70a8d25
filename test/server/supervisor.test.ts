// The real-crash supervisor (src/server/supervisor.ts), on its own: Wakeup's bounded waits end at
// the event that makes them true or at their bound (virtual time); a Supervisor hands over each
// line a child prints after its start line, restarts a SIGKILLed child at once, or — kill('later')
// — only when the runner calls start(), and ends with an orderly stop.
import t from 'tap';
import { systemClock, VirtualClock } from '../../pmem/index.js';
import { stopAll, Supervisor, Wakeup } from '../../src/server/index.js';

t.test('Wakeup: true at the notify that makes the condition hold, false at the bound', async (t) => {
  const clock = new VirtualClock();
  const w = new Wakeup(clock);
  let n = 0;
  const hit = w.until(() => n >= 2, 1000);
  n = 1;
  w.notify();
  n = 2;
  w.notify();
  t.equal(await hit, true);
  t.equal(clock.nowMs(), 0, 'no time passed');
  const miss = w.until(() => n >= 3, 1000);
  clock.advanceMs(999);
  w.notify();
  clock.advanceMs(1);
  t.equal(await miss, false, 'the bound');
  t.equal(await w.until(() => true, 0), true, 'already true: at once');
});

// A child that prints the start line and then a numbered line every 10 ms until SIGTERM.
const CHILD = "let i=0,h;process.on('SIGTERM',()=>{clearInterval(h);process.exit(0)});console.log(JSON.stringify({port:0,recovered:{}}));h=setInterval(()=>console.log(JSON.stringify({t:'tick',i:i++})),10)";

t.test('Supervisor: lines as they arrive, kill() restarts at once, kill(\'later\') when asked, an orderly stop', async (t) => {
  const events = new Wakeup(systemClock);
  const lines: Array<{ gen: number; text: string }> = [];
  const sup = new Supervisor({ args: () => ['-e', CHILD], clock: systemClock, log: undefined, restartsMax: 5, name: 'child', wakeup: events, onLine: (text, gen) => lines.push({ gen, text }) }, 'none', []);
  t.teardown(() => sup.destroy());
  t.equal((await sup.start()).generation, 1);
  t.ok(await events.until(() => lines.length >= 3, 60_000), 'lines after the start line');
  t.same(JSON.parse(lines[0]!.text), { t: 'tick', i: 0 }, 'the first line after the start line');
  t.ok(sup.serving);
  await sup.kill();
  t.ok(await events.until(() => sup.serving && sup.generation === 2, 60_000), 'restarted at once');
  await sup.kill('later');
  t.equal(sup.generation, 2, 'not restarted');
  t.notOk(sup.serving);
  t.equal((await sup.start()).generation, 3, 'restarted when asked');
  t.ok(await events.until(() => lines.some((l) => l.gen === 3), 60_000), 'the new incarnation\'s lines');
  await stopAll([sup]);
  t.same(sup.incarnations.map((r) => r.end), ['external', 'external', 'stop']);
  t.same(sup.failures, []);
});

t.test('a `pmrpc serve` run by a Supervisor dies with its runner (SIGKILL of the runner leaves no server)', async (t) => {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { spawn } = await import('node:child_process');
  const { createInterface } = await import('node:readline');
  const { fileURLToPath, pathToFileURL } = await import('node:url');
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-sup-orphan-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const server = pathToFileURL(fileURLToPath(new URL('../../dist/src/server/index.js', import.meta.url))).href;
  const pmem = pathToFileURL(fileURLToPath(new URL('../../dist/pmem/index.js', import.meta.url))).href;
  const main = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
  const script = `import { Supervisor } from ${JSON.stringify(server)};
import { systemClock } from ${JSON.stringify(pmem)};
const pm = ${JSON.stringify(join(dir, 'a.pm'))};
const sup = new Supervisor({ args: () => [${JSON.stringify(main)}, 'serve', '--app', 'rpc', '--create', '--size', '4194304', '--pm', pm, '--port', '0', '--json'], clock: systemClock, log: undefined, restartsMax: 1, name: 'n' }, pm, []);
await sup.start();
console.log(JSON.stringify({ pid: sup.child.pid }));
setInterval(() => {}, 1000);`;
  const runner = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: runner.stdout! }).once('line', resolve);
    runner.once('exit', (code) => reject(new Error(`the runner exited (${String(code)}) before its server listened`)));
  });
  const { pid } = JSON.parse(line) as { pid: number };
  const alive = (p: number): boolean => {
    try {
      process.kill(p, 0);
      return true;
    } catch {
      return false;
    }
  };
  t.ok(alive(pid), `the serve child ${pid} runs`);
  runner.kill('SIGKILL');
  // A bounded wait on the event (the child's exit), not a speed claim.
  const end = Date.now() + 120_000;
  while (alive(pid) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  const left = alive(pid);
  if (left) process.kill(pid, 'SIGKILL');
  t.notOk(left, 'the serve child exited after its runner was SIGKILLed');
});
