/** The benchmarks' cell placement (bench/placement.ts): the load on one CPU, the server's main thread on another, and back. */
import t from 'tap';
import { spawn } from 'node:child_process';
import { allowedCpus, LOAD_CPU, loadCommand, pinPair, pinServer, placementNote, SERVER_CPU, unpinnedReason } from '../../bench/placement.js';

const why = unpinnedReason();

t.test('a cell without a server pid runs unpinned, and says how the cells are placed', async (t) => {
  const p = pinPair(undefined);
  t.equal(p.pinned, false);
  p.restore();
  t.match(placementNote(), why === null ? /^pinned \(taskset\)/ : /^unpinned \(/);
});

t.test('pinned: the server on SERVER_CPU, this thread on LOAD_CPU, then back where it was', { skip: why ?? false }, async (t) => {
  const before = allowedCpus(process.pid);
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  try {
    await new Promise<void>((r) => child.once('spawn', () => r()));
    const p = pinPair(child.pid);
    t.equal(p.pinned, true);
    t.equal(allowedCpus(child.pid!), String(SERVER_CPU), 'the server\'s main thread');
    t.equal(allowedCpus(process.pid), String(LOAD_CPU), 'the load\'s (this) thread');
    p.restore();
    t.equal(allowedCpus(process.pid), before, 'restored');
    p.restore();
    t.equal(allowedCpus(process.pid), before, 'a second restore changes nothing');
  } finally {
    child.kill('SIGKILL');
  }
});

t.test('another process\'s server and load (redis): pinned by pid, and by a taskset prefix', { skip: why ?? false }, async (t) => {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  try {
    await new Promise<void>((r) => child.once('spawn', () => r()));
    t.equal(pinServer(child.pid), true);
    t.equal(allowedCpus(child.pid!), String(SERVER_CPU));
  } finally {
    child.kill('SIGKILL');
  }
  t.same(loadCommand('redis-benchmark', ['-n', '1']), ['taskset', ['-c', String(LOAD_CPU), 'redis-benchmark', '-n', '1']]);
});
