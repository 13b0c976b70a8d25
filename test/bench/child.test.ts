// A bench server child dies with its parent: a benchmark (or a test running one) killed by SIGKILL
// leaves no server process behind (bench/child.ts exitWithParent: the child's stdin pipe reaches EOF).
import t from 'tap';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

const FLUSH_CELL = pathToFileURL(fileURLToPath(new URL('../../dist/bench/flush-cell.js', import.meta.url))).href;
const CELL = { link: 'tcp', payloadBytes: 64, clients: 1, outstanding: 1, handlerUs: 0, placement: 'inline', ringSlots: 16, ddio: false, strategy: 'wflush' };

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

t.test('SIGKILL of a bench parent: its flush-server child exits on its own', async (t) => {
  const script = `import { startServerProcess } from ${JSON.stringify(FLUSH_CELL)};
const s = await startServerProcess(${JSON.stringify(CELL)}, 5);
console.log(JSON.stringify({ pid: s.child.pid, port: s.port }));
setInterval(() => {}, 1000);`;
  const parent = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: parent.stdout! }).once('line', resolve);
    parent.once('exit', (code) => reject(new Error(`the parent exited (${String(code)}) before its child listened`)));
  });
  const { pid } = JSON.parse(line) as { pid: number };
  t.ok(alive(pid), `the server child ${pid} runs`);
  parent.kill('SIGKILL');
  // Bounded wait on the event (the child's exit), not a speed claim.
  const end = Date.now() + 120_000;
  while (alive(pid) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  const left = alive(pid);
  if (left) process.kill(pid, 'SIGKILL');
  t.notOk(left, 'the child exited after its parent was SIGKILLed');
});
