/** bench tcp's CPU-per-request probe: a child's CPU time from /proc (Linux), user and system apart, undefined when unknown. */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import t from 'tap';
import { childCpuSplitUs, childCpuUs } from '../../bench/tcp.js';

t.test('childCpuUs reads a live process and grows with the CPU it uses', { skip: existsSync('/proc/self/stat') ? false : 'no /proc' }, (t) => {
  const before = childCpuUs(process.pid);
  t.type(before, 'number');
  // Spin ~300 ms of CPU: clock ticks are 10 ms, so the reading must move.
  const until = performance.now() + 300;
  let x = 0;
  while (performance.now() < until) x += Math.sqrt(x + 1);
  t.ok(x > 0);
  const after = childCpuUs(process.pid)!;
  t.ok(after > before!, `${after} > ${before}`);
  t.end();
});

t.test('childCpuUs is undefined for no pid and for a process that is gone', (t) => {
  t.equal(childCpuUs(undefined), undefined);
  t.equal(childCpuSplitUs(undefined), undefined);
  const gone = spawnSync(process.execPath, ['-e', '0']).pid;
  t.equal(childCpuUs(gone), undefined);
  t.equal(childCpuSplitUs(gone), undefined);
  t.end();
});

t.test('childCpuSplitUs: a child that computes and makes syscalls has both parts, and they sum to childCpuUs', { skip: existsSync('/proc/self/stat') ? false : 'no /proc' }, async (t) => {
  // The child computes (JS), then makes 100,000 syscalls (1-byte writes to /dev/null: ≈ 100 ms of
  // system time here), counted by work, not by time (a loaded machine only stretches them), and says
  // so; then it waits (no CPU) until it is killed.
  const script = `
    const fs = require('node:fs');
    let x = 0; for (let i = 0; i < 5e6; i++) x += Math.sqrt(x + i);
    const fd = fs.openSync('/dev/null', 'w'); const b = Buffer.alloc(1);
    for (let i = 0; i < 100000; i++) fs.writeSync(fd, b);
    process.stdout.write('done ' + (x > 0) + '\\n');
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    const split = childCpuSplitUs(child.pid);
    t.ok(split !== undefined, 'read from /proc');
    t.ok(split!.userUs >= 50_000, `user time of the JS loop (${split!.userUs} µs)`);
    t.ok(split!.systemUs >= 30_000, `system time of the syscalls (${split!.systemUs} µs)`);
    // Read again: the waiting child adds (almost) nothing; the sum is childCpuUs.
    const total = childCpuUs(child.pid)!;
    t.ok(total >= split!.userUs + split!.systemUs && total <= split!.userUs + split!.systemUs + 50_000, `sum ${total} µs`);
  } finally {
    child.kill('SIGKILL');
  }
});
