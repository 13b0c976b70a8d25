// RoleTimer (bench/nic-work.ts) on injected clocks: each section's time goes to the innermost
// role (NIC sections on the wall clock, host passes on the CPU clock minus what ran nested in
// them), the bookkeeping between a role change's two wall-clock reads to accounting, nothing to
// the client's time outside any section, and the clocks are read only where the role changes.
import t from 'tap';
import { RoleTimer } from '../../bench/nic-work.js';

/**
 * Two clocks: `work(n)` advances both by n µs, `deschedule(n)` only the wall clock (other
 * processes ran); each wall-clock read costs `tick` µs of both (the bookkeeping around it).
 */
function fakeClocks(tick: number): { clocks: { wall: () => number; cpu: () => number }; work: (us: number) => void; deschedule: (us: number) => void; reads: () => { wall: number; cpu: number } } {
  let wall = 1000;
  let cpu = 50;
  const reads = { wall: 0, cpu: 0 };
  return {
    clocks: {
      wall: () => {
        reads.wall++;
        const v = wall;
        wall += tick;
        cpu += tick;
        return v;
      },
      cpu: () => {
        reads.cpu++;
        return cpu;
      },
    },
    work: (us) => {
      wall += us;
      cpu += us;
    },
    deschedule: (us) => {
      wall += us;
    },
    reads: () => ({ ...reads }),
  };
}

t.test("a host pass with a NIC call inside: the NIC time is the NIC's, the rest the host's", async (t) => {
  const c = fakeClocks(0);
  const rt = new RoleTimer(c.clocks);
  c.work(500); // client work: no role
  rt.enter('host');
  c.work(10);
  rt.enter('nic');
  c.work(7);
  rt.exit();
  c.work(3);
  rt.exit();
  c.work(400); // client again
  t.same(rt.times(), { nicUs: 7, hostUs: 13, accountingUs: 0 });
  t.same(c.reads().cpu, 2, 'the CPU clock is read where the pass starts and ends, not at its NIC calls');
  t.equal(rt.hostPasses, 1, 'one host pass counted');
  rt.enter('host');
  rt.exit();
  t.equal(rt.hostPasses, 2, 'each pass counted once');
});

t.test('the same role nested reads no clock and is charged once', async (t) => {
  const c = fakeClocks(0);
  const rt = new RoleTimer(c.clocks);
  rt.enter('nic');
  const after = c.reads();
  c.work(4);
  rt.enter('nic'); // e.g. runAll calling step
  c.work(5);
  rt.exit();
  t.same(c.reads(), after, 'no read for a NIC call inside a NIC call');
  c.work(6);
  rt.exit();
  t.same(rt.times(), { nicUs: 15, hostUs: 0, accountingUs: 0 });
  t.equal(c.reads().cpu, 0, 'NIC sections never read the CPU clock (no system call)');
});

t.test('role changes back and forth: NIC inside host inside NIC, host inside NIC inside host', async (t) => {
  const c = fakeClocks(0);
  const rt = new RoleTimer(c.clocks);
  rt.enter('nic');
  c.work(2);
  rt.enter('host'); // a pass run synchronously inside a NIC call
  c.work(3);
  rt.enter('nic');
  c.work(5);
  rt.exit();
  c.work(7);
  rt.exit();
  c.work(11);
  rt.exit();
  t.same(rt.times(), { nicUs: 2 + 5 + 11, hostUs: 3 + 7, accountingUs: 0 });

  const d = fakeClocks(0);
  const r2 = new RoleTimer(d.clocks);
  r2.enter('host');
  d.work(1);
  r2.enter('nic');
  d.work(2);
  r2.enter('host');
  d.work(4);
  r2.exit();
  d.work(8);
  r2.exit();
  d.work(16);
  r2.exit();
  t.same(r2.times(), { nicUs: 2 + 8, hostUs: 1 + 4 + 16, accountingUs: 0 }, 'the inner pass is charged once');
});

t.test('a pass descheduled in the middle is charged its CPU, a NIC section its wall time', async (t) => {
  const c = fakeClocks(0);
  const rt = new RoleTimer(c.clocks);
  rt.enter('host');
  c.work(20);
  c.deschedule(5000);
  rt.enter('nic');
  c.work(3);
  rt.exit();
  c.work(20);
  rt.exit();
  t.same(rt.times(), { nicUs: 3, hostUs: 40, accountingUs: 0 });
  rt.enter('nic');
  c.work(1);
  c.deschedule(100);
  rt.exit();
  t.same(rt.times(), { nicUs: 104, hostUs: 40, accountingUs: 0 }, 'documented: a descheduled NIC section is charged the wall time');
});

t.test("the timer's own cost goes to accounting, not to a role", async (t) => {
  // Every wall-clock read costs 1 µs: the time between a role change's two reads is the timer's.
  const c = fakeClocks(1);
  const rt = new RoleTimer(c.clocks);
  rt.enter('host'); // wall reads at 1000 (ends the client's time) and 1001 (starts the pass)
  c.work(10);
  rt.enter('nic');
  c.work(20);
  rt.exit();
  c.work(30);
  rt.exit();
  // A section is charged its work plus the wall read that starts it (the fake charges a read's cost
  // after the stamp it returns): the NIC 20 + 1, the pass 10 + 30 + 1 for its resumption after the
  // NIC call (its CPU clock starts after its entry's bookkeeping and stops before its exit's; the
  // NIC section and the two role changes inside it are subtracted) and 1 for the wall read that
  // starts its wall span; each of the 4 role changes costs 1 µs of accounting.
  t.same(rt.times(), { nicUs: 21, hostUs: 10 + 30 + 1 + 1, accountingUs: 4 });
  t.same(c.reads(), { wall: 10, cpu: 2 }, 'two wall reads per role change and two for the pass span, the CPU clock at the pass boundaries');
});

t.test('an unmatched exit charges nothing', async (t) => {
  const c = fakeClocks(0);
  const rt = new RoleTimer(c.clocks);
  rt.exit();
  c.work(9);
  t.same(rt.times(), { nicUs: 0, hostUs: 0, accountingUs: 0 });
});

t.test('instrumentNic and timedSchedule charge the wrapped calls', async (t) => {
  const c = fakeClocks(0);
  const rt = new RoleTimer(c.clocks);
  const nic = {
    step(): number {
      c.work(6);
      return 1;
    },
    submit(): void {},
    runAll(): void {
      this.step();
      this.step();
    },
    drainAll(): void {},
  };
  rt.instrumentNic(nic as never);
  const passes: Array<() => void> = [];
  const schedule = rt.timedSchedule((fn) => passes.push(fn));
  schedule(() => {
    c.work(4);
    nic.runAll(); // runAll → step → step: one NIC section of 12
    c.work(1);
  });
  t.equal(nic.step(), 1, 'the wrapped call returns what the NIC returned');
  t.same(rt.times(), { nicUs: 6, hostUs: 0, accountingUs: 0 }, 'a pass is timed when it runs, not when scheduled');
  passes[0]!();
  t.same(rt.times(), { nicUs: 18, hostUs: 5, accountingUs: 0 });
  // A pass that throws still ends its section.
  schedule(() => {
    c.work(2);
    throw new Error('boom');
  });
  t.throws(() => passes[1]!(), /boom/);
  c.work(100);
  t.same(rt.times(), { nicUs: 18, hostUs: 7, accountingUs: 0 });
});

t.test("a pass is charged neither its CPU clock's own reads nor other threads' CPU (the smaller of its two spans)", async (t) => {
  // The process's CPU clock: each read costs 30 µs of CPU (a getrusage on a loaded machine), half
  // of it before the value it returns; V8's helper threads may add CPU without the JS thread's wall.
  let wall = 0;
  let cpu = 0;
  const clocks = {
    wall: () => wall,
    cpu: () => {
      wall += 15;
      cpu += 15;
      const v = cpu;
      wall += 15;
      cpu += 15;
      return v;
    },
  };
  const rt = new RoleTimer(clocks);
  rt.enter('host');
  wall += 8;
  cpu += 8;
  rt.exit();
  t.same(rt.times().hostUs, 8, 'the pass is charged its 8 µs, not the 30 µs of the reads that bound it');
  rt.enter('host');
  wall += 5;
  cpu += 5 + 400; // a concurrent GC thread ran meanwhile
  rt.exit();
  t.same(rt.times().hostUs, 8 + 5, 'nor the helper threads\' CPU');
  rt.enter('host');
  wall += 6 + 5000; // descheduled
  cpu += 6;
  rt.exit();
  t.same(rt.times().hostUs, 8 + 5 + 6 + 30, 'a descheduled pass: its CPU span (with the reads it cannot tell apart)');
});

t.test("instrumentNotify: a server's SEND to a client is a NIC section, not the pass's", async (t) => {
  const c = fakeClocks(0);
  const rt = new RoleTimer(c.clocks);
  const delivered: number[] = [];
  const nic = {
    createQp() {
      return {
        qpn: 7,
        notify(data: Uint8Array): void {
          c.work(9); // the link delivers it to the client's handler synchronously
          delivered.push(data.length);
        },
      };
    },
  };
  rt.instrumentNotify(nic as never);
  const qp = (nic as unknown as { createQp: () => { qpn: number; notify: (d: Uint8Array) => void } }).createQp();
  t.equal(qp.qpn, 7, 'createQp still returns the NIC\'s QP');
  const passes: Array<() => void> = [];
  rt.timedSchedule((fn) => passes.push(fn))(() => {
    c.work(3);
    qp.notify(new Uint8Array(4));
    c.work(2);
  });
  passes[0]!();
  t.same(delivered, [4]);
  t.same(rt.times(), { nicUs: 9, hostUs: 5, accountingUs: 0 });
});
