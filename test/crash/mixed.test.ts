// The default draw of a sweep (`--schedule mixed`, the NIC configuration of early seeds): every
// sweep of four or more seeds runs plain random, a client held right after its atomic, a QP held
// right after its atomic and PCT; seeds 2, 3 (and every 8th after them) run DDIO on with an eager
// drain, seeds 6, 7 DDIO on with the drain on FLUSH only;
// a replay command names the schedule its seed drew.
import t from 'tap';
import { explore, mixedSchedule, nicConfigFor, registerExplorerApp, replayCommand, resolveExploreOptions, resolveSchedule, scheduleName, withAppDefaults, type ExplorerApp } from '../../src/testing/crash/index.js';

t.test('mixedSchedule: the kinds cycle over seeds', async (t) => {
  t.same(mixedSchedule(1), { mode: 'random' });
  t.match(mixedSchedule(2), { mode: 'random', stallUnit: 'client', stallOn: 'atomic', stallSteps: 400 });
  t.match(mixedSchedule(3), { mode: 'random', stallUnit: 'qp', stallOn: 'atomic' });
  t.match(mixedSchedule(4), { mode: 'pct', depth: 3 });
  t.same(mixedSchedule(5), { mode: 'random' });
  t.not(mixedSchedule(2).horizon, mixedSchedule(6).horizon, 'the horizon alternates per cycle');
  t.throws(() => resolveSchedule({ mode: 'dfs' as never }), TypeError);
});

t.test('a mixed run uses its seed\'s schedule and its replay names it', async (t) => {
  const app = registerExplorerApp({ opsPerClient: 2 }) as ExplorerApp<unknown>;
  const r = await explore(app, { seed: 2, schedule: { mode: 'mixed' }, pointsMax: 10, imagesPerPoint: 1 });
  t.equal(r.schedule, scheduleName(resolveSchedule(mixedSchedule(2))));
  const o = withAppDefaults(app, resolveExploreOptions({ seed: 2, schedule: { mode: 'mixed' } }));
  t.match(replayCommand(app, o), /--stalls 20 --stall-steps 400 --stall-unit client --stall-on atomic/);
  // A run of the library's default (random) names it where the CLI's default would draw another.
  t.match(replayCommand(app, resolveExploreOptions({ seed: 2 })), /--schedule random/);
  t.notMatch(replayCommand(app, resolveExploreOptions({ seed: 1 })), /--schedule/, 'seed 1 draws plain random anyway');
});

t.test('seeds 2, 3 and every 8th after them: DDIO on, eager drain; 6, 7 and every 8th after: DDIO on, drain on FLUSH (unless pinned)', async (t) => {
  for (const s of [2, 3, 10, 11, 18, 19]) t.match(nicConfigFor(s), { ddio: true, drain: 'eager' }, `seed ${s}`);
  for (const s of [6, 7, 14, 15, 22, 23]) t.match(nicConfigFor(s), { ddio: true, drain: 'onFlush' }, `seed ${s}`);
  // Paired with the stalls of the mixed schedule: a client, then a QP, held right after its atomic.
  t.match([mixedSchedule(2), mixedSchedule(3), mixedSchedule(6), mixedSchedule(7)], [{ stallUnit: 'client', stallOn: 'atomic' }, { stallUnit: 'qp', stallOn: 'atomic' }, { stallUnit: 'client', stallOn: 'atomic' }, { stallUnit: 'qp', stallOn: 'atomic' }]);
  t.match(nicConfigFor(2, { ddio: false, drain: 'onFlush' }), { ddio: false, drain: 'onFlush' }, 'pins win');
});
