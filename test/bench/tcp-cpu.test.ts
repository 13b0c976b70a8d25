/** bench tcp's CPU-per-request probe: a child's CPU time from /proc (Linux), undefined when unknown. */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import t from 'tap';
import { childCpuUs } from '../../bench/tcp.js';

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
  const gone = spawnSync(process.execPath, ['-e', '0']).pid;
  t.equal(childCpuUs(gone), undefined);
  t.end();
});
