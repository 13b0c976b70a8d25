// Durable linearizability, "an acknowledged write survives every crash" (DESIGN §5): a write whose
// placement depends on another chain's result must not be acknowledged before that result is
// durable. Driven op by op under every drain policy, DDIO on and off:
//
//   A: put(k1) runs its CAS on slot h (visible once drained, not yet durable: its FLUSH is queued);
//   B: put(k2), same window, sees h taken, installs k2 at h+1 (another cache line) — acknowledged;
//   crash before A's FLUSH: every image must still give k2 (an empty h would end k2's probe).
//
// The same across probe groups (layout version 2): B's PUT of k2 finds A's claim on the last slot
// of k2's group 0 and installs k2 in group 1, another run of slots: its index FLUSHes must cover
// group 0 too (mutant finalGroupIndexFlush flushes only the group holding k2's slot).
//
// And the same for a DELETE acknowledged as a no-op because the key's slot held a tombstone that
// another chain's CAS had just installed, not yet durably.
import t from 'tap';
import { DRAIN_CONFIGS, PUT_STEPS_THROUGH_CAS, TWO_GROUP_LAYOUT, checkImages, keysOnOddHome, keysSharingGroup0, makeRig } from './stepper.js';
import { te } from './helpers.js';
import type { KvFaults } from '../../../src/apps/kv/index.js';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;

/** Runs the lost-PUT scenario; returns the images that lost B's acknowledged PUT. */
async function lostPut(cfgIndex: number, ddio: boolean, faults: Partial<KvFaults>): Promise<{ images: number; bad: string[]; claimVisible: boolean; bSlot: number; home: number; note: string }> {
  const cfg = DRAIN_CONFIGS[cfgIndex]!;
  const r = await makeRig(cfg, ddio, seed);
  const { home, keys: [k1, k2] } = keysOnOddHome(r.g, 2) as { home: number; keys: [string, string] };
  const a = await r.client(faults);
  const b = await r.client(faults);
  const pa = a.put(k1, te.encode('a1'));
  pa.catch(() => undefined);
  await r.step(a, 1_000); // A's locate READ (one message): the window is empty
  await r.step(a, PUT_STEPS_THROUGH_CAS); // A's install chain up to its CAS on slot `home`; its slot FLUSH stays queued
  r.pressure(cfg.pressure); // the NIC drains A's CAS result into host memory (dirty CPU lines with DDIO)
  const claimVisible = r.visibleSlot(home).ptr !== r.g.base;
  await r.finish(b, b.put(k2, te.encode('b2'))); // acknowledged
  const bSlot = [0, 1, 2, 3].map((i) => home + i).find((i) => r.visibleSlot(i).version > 0n && i !== home) ?? -1;
  const state = r.region.crashState(); // crash now: A's FLUSH never ran
  const rep = await checkImages(state, [k1, k2], (got) => {
    if (got.get(k2) !== 'b2') return `acknowledged put(${k2}, b2) lost: get → ${String(got.get(k2))}`;
    if (got.get(k1) !== undefined && got.get(k1) !== 'a1') return `get(${k1}) → ${String(got.get(k1))}, which no write wrote`;
    return undefined;
  }, seed);
  return { images: rep.images, bad: rep.bad, claimVisible, bSlot, home, note: `${rep.exhaustive ? 'every' : `a sample (seed ${rep.seed}) of the`} image(s)` };
}

/** The lost-PUT scenario across groups: slots h, h+1, h+2 durably hold f1…f3, A claims h+3 (not durable), B installs k2 in its group 1. */
async function lostPutAcrossGroups(cfgIndex: number, ddio: boolean, faults: Partial<KvFaults>): Promise<{ images: number; bad: string[]; claimVisible: boolean; bSlot: number; group1: number; note: string }> {
  const cfg = DRAIN_CONFIGS[cfgIndex]!;
  const r = await makeRig(cfg, ddio, seed, TWO_GROUP_LAYOUT);
  const { home, keys, last: k2, group1 } = keysSharingGroup0(r.g, 5);
  const [f1, f2, f3, k1] = keys as [string, string, string, string];
  const a = await r.client(faults);
  const b = await r.client(faults);
  for (const [k, v] of [[f1, 'f1'], [f2, 'f2'], [f3, 'f3']] as const) await r.finish(a, a.put(k, te.encode(v)));
  r.nic.drainAll();
  const pa = a.put(k1, te.encode('a1'));
  pa.catch(() => undefined);
  await r.step(a, 1_000); // A's locate READ of group 0 (one message): h+3 is free
  await r.step(a, PUT_STEPS_THROUGH_CAS); // A's CAS on h+3; its slot FLUSH stays queued
  r.pressure(cfg.pressure);
  const claimVisible = r.visibleSlot(home + 3).ptr !== r.g.base;
  await r.finish(b, b.put(k2, te.encode('b2'))); // group 0 taken: k2 goes to group 1 — acknowledged
  const bSlot = r.server.inspect().items.get(Buffer.from(k2).toString('hex'))?.slot ?? -1;
  const state = r.region.crashState(); // crash now: A's FLUSH never ran
  const rep = await checkImages(state, [f1, f2, f3, k1, k2], (got) => {
    if (got.get(k2) !== 'b2') return `acknowledged put(${k2}, b2) lost: get → ${String(got.get(k2))}`;
    for (const [k, v] of [[f1, 'f1'], [f2, 'f2'], [f3, 'f3']] as const) if (got.get(k) !== v) return `acknowledged put(${k}, ${v}) lost: get → ${String(got.get(k))}`;
    if (got.get(k1) !== undefined && got.get(k1) !== 'a1') return `get(${k1}) → ${String(got.get(k1))}, which no write wrote`;
    return undefined;
  }, seed);
  return { images: rep.images, bad: rep.bad, claimVisible, bSlot, group1, note: `${rep.exhaustive ? 'every' : `a sample (seed ${rep.seed}) of the`} image(s)` };
}

async function lostDelete(cfgIndex: number, ddio: boolean, faults: Partial<KvFaults>): Promise<{ images: number; bad: string[]; tombstoneVisible: boolean; note: string }> {
  const cfg = DRAIN_CONFIGS[cfgIndex]!;
  const r = await makeRig(cfg, ddio, seed);
  const { home, keys: [k1] } = keysOnOddHome(r.g, 1) as { home: number; keys: [string] };
  const a = await r.client(faults);
  const b = await r.client(faults);
  await r.finish(a, a.put(k1, te.encode('old')));
  r.nic.drainAll();
  const before = r.visibleSlot(home).version;
  const pa = a.delete(k1); // slot cached: one chain
  pa.catch(() => undefined);
  await r.step(a, PUT_STEPS_THROUGH_CAS);
  r.pressure(cfg.pressure);
  const tombstoneVisible = r.visibleSlot(home).version === before + 1n;
  await r.finish(b, b.delete(k1)); // B finds the tombstone: nothing to delete — acknowledged
  const state = r.region.crashState();
  const rep = await checkImages(state, [k1], (got) => (got.get(k1) === undefined ? undefined : `acknowledged delete(${k1}) lost: get → ${String(got.get(k1))}`), seed);
  return { images: rep.images, bad: rep.bad, tombstoneVisible, note: `${rep.exhaustive ? 'every' : `a sample (seed ${rep.seed}) of the`} image(s)` };
}

for (let i = 0; i < DRAIN_CONFIGS.length; i++) {
  for (const ddio of [true, false]) {
    const name = `${DRAIN_CONFIGS[i]!.name}, ddio ${ddio}`;
    t.test(`an acknowledged PUT placed past another chain's not-yet-durable CAS survives the crash (${name}, seed ${seed})`, async (t) => {
      const x = await lostPut(i, ddio, {});
      t.ok(x.claimVisible, `A's CAS result is in host memory before B probes (slot ${x.home})`);
      t.equal(x.bSlot, x.home + 1, 'B installed k2 on the next slot, another cache line');
      t.ok(x.images > 0);
      t.same(x.bad, [], `${x.images} image(s) (${x.note}): B's acknowledged PUT in each`);
      // The mutant that takes the fix back (index FLUSH over the slot only) is caught wherever drained placement is not already durable.
      const m = await lostPut(i, ddio, { narrowIndexFlush: true });
      if (ddio) t.ok(m.bad.length > 0, `mutant narrowIndexFlush caught: ${m.bad[0] ?? 'no bad image'}`);
      else t.same(m.bad, [], 'ddio off: drained placement is durable, so the mutant loses nothing here');
    });
    t.test(`an acknowledged PUT placed in group 1 past another chain's not-yet-durable claim in group 0 survives the crash (${name}, seed ${seed})`, async (t) => {
      const x = await lostPutAcrossGroups(i, ddio, {});
      t.ok(x.claimVisible, "A's CAS result on the last slot of group 0 is in host memory before B probes");
      t.equal(x.bSlot, x.group1, 'B installed k2 on the first slot of its group 1, another run of slots');
      t.ok(x.images > 0);
      t.same(x.bad, [], `${x.images} image(s) (${x.note}): B's acknowledged PUT in each`);
      // The mutant that flushes only the group holding the slot is caught wherever drained placement is not already durable.
      const m = await lostPutAcrossGroups(i, ddio, { finalGroupIndexFlush: true });
      if (ddio) t.ok(m.bad.length > 0, `mutant finalGroupIndexFlush caught: ${m.bad[0] ?? 'no bad image'}`);
      else t.same(m.bad, [], 'ddio off: drained placement is durable, so the mutant loses nothing here');
    });
    t.test(`an acknowledged no-op DELETE decided on another chain's not-yet-durable tombstone survives the crash (${name}, seed ${seed})`, async (t) => {
      const x = await lostDelete(i, ddio, {});
      t.ok(x.tombstoneVisible, "A's tombstone CAS is in host memory before B looks");
      t.same(x.bad, [], `${x.images} image(s) (${x.note}): the key absent in each`);
      const m = await lostDelete(i, ddio, { deleteNoopWithoutFlush: true });
      if (ddio) t.ok(m.bad.length > 0, `mutant deleteNoopWithoutFlush caught: ${m.bad[0] ?? 'no bad image'}`);
      else t.same(m.bad, [], 'ddio off: drained placement is durable, so the mutant loses nothing here');
    });
  }
}
