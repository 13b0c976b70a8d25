// bench/profile-analysis.ts (profile-tcp.ts's --analyse): inclusive time per function and the server's phases, over a
// synthetic V8 CPU profile whose samples and stacks are known.
import t from 'tap';
import { inclusiveTimes, phaseTimes, selfTimes } from '../../bench/profile-analysis.js';

// V8 gives native frames (the root, writeBuffer, the GC) line -1; the analysis prints line + 1.
const frame = (functionName: string, url: string) => ({ functionName, url, lineNumber: url === '' ? -1 : 0 });
// root → #pump → #processBatch → commit → commit (recursive) ; #pump → writeBuffer ; root → (garbage collector)
const profile = {
  nodes: [
    { id: 1, callFrame: frame('(root)', ''), children: [2, 7] },
    { id: 2, callFrame: frame('#pump', 'file:///x/dist/src/transport/server.js'), children: [3, 6] },
    { id: 3, callFrame: frame('#processBatch', 'file:///x/dist/src/rpc/server.js'), children: [4] },
    { id: 4, callFrame: frame('commit', 'file:///x/dist/recovery/redo-log.js'), children: [5] },
    { id: 5, callFrame: frame('commit', 'file:///x/dist/recovery/redo-log.js'), children: [] },
    { id: 6, callFrame: frame('writeBuffer', ''), children: [] },
    { id: 7, callFrame: frame('(garbage collector)', ''), children: [] },
  ],
  // Sample i lasts timeDeltas[i + 1] µs (the analysis' convention); the last one lasts 0.
  samples: [5, 4, 6, 3, 7, 5, 1],
  timeDeltas: [0, 10, 10, 10, 10, 10, 10],
  startTime: 1000,
};

t.test('inclusive time counts a sample once for every distinct function on its stack', async (t) => {
  const incl = inclusiveTimes(profile, 0, Number.MAX_SAFE_INTEGER);
  // commit: samples 0, 1, 5 (the recursive frame once each) = 30 µs; #pump: 0, 1, 2, 3, 5 = 50.
  t.equal(incl.get('commit dist/recovery/redo-log.js:1'), 30);
  t.equal(incl.get('#pump dist/src/transport/server.js:1'), 50);
  t.equal(incl.get('#processBatch dist/src/rpc/server.js:1'), 40);
  t.equal(incl.get('writeBuffer :0'), 10);
  t.equal(incl.get('(root) :0'), 60); // the last sample lasts 0
  // Self time puts commit's 30 µs on the leaf, none on #pump.
  const self = selfTimes(profile, 0, Number.MAX_SAFE_INTEGER);
  t.equal(self.get('commit dist/recovery/redo-log.js:1'), 30);
  t.equal(self.get('#pump dist/src/transport/server.js:1'), undefined);
});

t.test('the window keeps only the samples inside it', async (t) => {
  // Sample timestamps: 1000, 1010, 1020, 1030, 1040, 1050, 1060; [1015, 1045) keeps samples 2, 3, 4.
  const incl = inclusiveTimes(profile, 1015, 1045);
  t.equal(incl.get('#pump dist/src/transport/server.js:1'), 20);
  t.equal(incl.get('commit dist/recovery/redo-log.js:1'), undefined);
  t.equal(incl.get('(garbage collector) :0'), 10);
});

t.test('phases per request, by the functions that run them', async (t) => {
  const phases = new Map(phaseTimes(inclusiveTimes(profile, 0, Number.MAX_SAFE_INTEGER), 10));
  t.equal(phases.get('NIC pump (socket read → ring, persist, ACK)'), 5);
  t.equal(phases.get('CPU pass (process a batch)'), 4);
  t.equal(phases.get('  redo-log commit'), 3);
  t.equal(phases.get('socket writes (writeBuffer)'), 1);
  t.equal(phases.get('garbage collector'), 1);
  t.equal(phases.get('strict: media written (pwrite)'), 0);
  t.equal(new Map(phaseTimes(new Map(), 0)).get('CPU pass (process a batch)'), 0);
});
