// Durable linearizability, "a read never returns state that a crash can take back" (DESIGN §5).
// Driven op by op under every drain policy, DDIO on and off:
//
//   A: put(k1, new) runs its CAS (visible once drained, not yet durable: its FLUSH is queued);
//   C: get(k1) → new;   crash before A's FLUSH;   every image must give new again
//   (`put(new) cut; get → new; crash; get → old` is not durably linearizable).
//
// And the probe variant: C's get(k2) finds k2 past slot h, which A's CAS claimed and B's CAS on
// h+1 followed, neither FLUSHed: every image must still give k2.
import t from 'tap';
import { DRAIN_CONFIGS, PUT_STEPS_THROUGH_CAS, checkImages, keysOnOddHome, makeRig } from './stepper.js';
import { td, te } from './helpers.js';
import type { KvFaults } from '../../../src/apps/kv/index.js';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;

async function dirtyRead(cfgIndex: number, ddio: boolean, faults: Partial<KvFaults>): Promise<{ read: string | undefined; images: number; bad: string[]; note: string }> {
  const cfg = DRAIN_CONFIGS[cfgIndex]!;
  const r = await makeRig(cfg, ddio, seed);
  const { keys: [k1] } = keysOnOddHome(r.g, 1) as { home: number; keys: [string] };
  const a = await r.client(faults);
  const c = await r.client(faults);
  await r.finish(a, a.put(k1, te.encode('old'))); // durable: acknowledged
  const pa = a.put(k1, te.encode('new')); // slot cached: one chain
  pa.catch(() => undefined);
  await r.step(a, PUT_STEPS_THROUGH_CAS);
  r.pressure(cfg.pressure);
  const v = await r.finish(c, c.get(k1));
  const read = v === undefined ? undefined : td.decode(v);
  const state = r.region.crashState(); // crash now: A's FLUSH never ran, C was told `read`
  const rep = await checkImages(state, [k1], (got) => {
    const after = got.get(k1);
    if (read === 'new' && after !== 'new') return `get(${k1}) returned new before the crash, ${String(after)} after it`;
    if (after !== 'old' && after !== 'new') return `get(${k1}) → ${String(after)}, which no write wrote`;
    return undefined;
  }, seed);
  return { read, images: rep.images, bad: rep.bad, note: `${rep.exhaustive ? 'every' : `a sample (seed ${rep.seed}) of the`} image(s)` };
}

async function dirtyProbe(cfgIndex: number, ddio: boolean, faults: Partial<KvFaults>): Promise<{ read: string | undefined; images: number; bad: string[]; note: string }> {
  const cfg = DRAIN_CONFIGS[cfgIndex]!;
  const r = await makeRig(cfg, ddio, seed);
  const { keys: [k1, k2] } = keysOnOddHome(r.g, 2) as { home: number; keys: [string, string] };
  const a = await r.client(faults);
  const b = await r.client(faults);
  const c = await r.client(faults);
  const pa = a.put(k1, te.encode('a1'));
  pa.catch(() => undefined);
  await r.step(a, 1_000); // locate
  await r.step(a, PUT_STEPS_THROUGH_CAS); // CAS on h
  r.pressure(cfg.pressure);
  const pb = b.put(k2, te.encode('b2'));
  pb.catch(() => undefined);
  await r.step(b, 1_000); // locate: h is k1's, h+1 free
  await r.step(b, PUT_STEPS_THROUGH_CAS); // CAS on h+1
  r.pressure(cfg.pressure);
  const v = await r.finish(c, c.get(k2));
  const read = v === undefined ? undefined : td.decode(v);
  const state = r.region.crashState();
  const rep = await checkImages(state, [k1, k2], (got) => {
    if (read === 'b2' && got.get(k2) !== 'b2') return `get(${k2}) returned b2 before the crash, ${String(got.get(k2))} after it`;
    return undefined;
  }, seed);
  return { read, images: rep.images, bad: rep.bad, note: `${rep.exhaustive ? 'every' : `a sample (seed ${rep.seed}) of the`} image(s)` };
}

for (let i = 0; i < DRAIN_CONFIGS.length; i++) {
  for (const ddio of [true, false]) {
    const name = `${DRAIN_CONFIGS[i]!.name}, ddio ${ddio}`;
    t.test(`a GET never returns a value a crash takes back (${name}, seed ${seed})`, async (t) => {
      const x = await dirtyRead(i, ddio, {});
      t.equal(x.read, 'new', "the GET saw A's CAS result before A's FLUSH (the scenario is reached)");
      t.same(x.bad, [], `${x.images} image(s) (${x.note}): the value the GET returned in each`);
      // The mutant that takes the fix back (no FLUSH in the GET chain) is caught wherever drained placement is not already durable.
      const m = await dirtyRead(i, ddio, { getWithoutFlush: true });
      if (ddio) t.ok(m.bad.length > 0, `mutant getWithoutFlush caught: ${m.bad[0] ?? 'no bad image'}`);
      else t.same(m.bad, [], 'ddio off: drained placement is durable, so the mutant loses nothing here');
    });
    t.test(`a GET past a slot another chain just claimed never returns a value a crash takes back (${name}, seed ${seed})`, async (t) => {
      const x = await dirtyProbe(i, ddio, {});
      t.equal(x.read, 'b2', 'the GET found k2 past the claimed slot');
      t.same(x.bad, [], `${x.images} image(s) (${x.note}): k2 in each`);
      const m = await dirtyProbe(i, ddio, { getWithoutFlush: true });
      if (ddio) t.ok(m.bad.length > 0, `mutant getWithoutFlush caught: ${m.bad[0] ?? 'no bad image'}`);
      else t.same(m.bad, [], 'ddio off: drained placement is durable, so the mutant loses nothing here');
    });
  }
}
