/** A child's CPU time, user and system apart (bench/tcp.ts childCpuSplitUs), as bench tcp's cells and probe-tcp report it. */
import t from 'tap';
import { spawn } from 'node:child_process';
import { childCpuSplitUs, childCpuUs } from '../../bench/tcp.js';

const linux = process.platform === 'linux';

t.test('no pid, or a pid that is gone: unknown', async (t) => {
  t.equal(childCpuSplitUs(undefined), undefined);
  t.equal(childCpuUs(undefined), undefined);
  t.equal(childCpuSplitUs(0x7ffffffe), undefined);
});

t.test('a child that computes and makes syscalls: both parts counted, and they sum to childCpuUs', { skip: linux ? false : 'reads /proc (Linux)' }, async (t) => {
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
