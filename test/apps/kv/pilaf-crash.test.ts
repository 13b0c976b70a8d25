// The Pilaf-style baseline under simulated crashes: its server CPU persists the item, then the
// entry, then replies; recovery repairs an entry a crash tore (the ptr word is the truth). Every
// crash point of a concurrent workload, seeded images, recovery in a fresh region; checkers: lost
// acknowledged writes and linearizability. PMRPC_SEED replays.
import t from 'tap';
import { crashImages, createPrng, materialize, PmemRegion, seededEntropy, type CrashState } from '../../../pmem/index.js';
import { InProcessFabric, QueuePair, Rnic } from '../../../flush/index.js';
import { checkLinearizable, kvModel, type KvInput, type KvOutput, type Operation } from '../../../src/check/linearizability.js';
import { PilafClient, PilafServer, cutHistoryAt, lostWrites, type KvLayoutOptions } from '../../../src/apps/kv/index.js';
import { td, te } from './helpers.js';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
const LAYOUT: Partial<KvLayoutOptions> = { slotCount: 12, probeSlots: 4, keyBytesMax: 16, classes: [{ sizeBytes: 64, count: 16 }, { sizeBytes: 128, count: 8 }], mailboxBuffers: 8 };
const KEYS = ['a', 'b', 'c', 'd', 'e'];

type Op = Operation<KvInput, KvOutput> & { error?: string };

t.test(`Pilaf-style: no acknowledged write lost, linearizable, at every crash point (seed ${seed})`, async (t) => {
  const prng = createPrng(seed);
  const region = PmemRegion.createInMemory(32 * 1024, { tracing: true, entropy: seededEntropy(prng.fork()) });
  PilafServer.format(region, LAYOUT);
  const nic = new Rnic(region, { drain: 'eager', entropy: seededEntropy(prng.fork()) });
  const fabric = new InProcessFabric(nic, { delivery: 'seeded', prng: prng.fork() });
  const server = PilafServer.open(region, nic);
  const clients = await Promise.all([0, 1, 2].map(() => PilafClient.connect(new QueuePair(fabric.connect(server.accept())), server.address)));
  let now = 0;
  const ops: Op[] = [];
  const captures: Array<{ time: number; state: CrashState }> = [];
  region.setCrashPointHook(() => captures.push({ time: ++now, state: region.crashState() }));
  await Promise.all(
    clients.map(async (c, ci) => {
      const r = prng.fork();
      for (let n = 0; n < 15; n++) {
        const key = KEYS[r.int(0, KEYS.length - 1)]!;
        const roll = r.int(0, 99);
        const input: KvInput = roll < 50 ? { kind: 'put', key, value: `c${ci}n${n}`.padEnd(r.int(4, 80), '.') } : roll < 85 ? { kind: 'get', key } : { kind: 'delete', key };
        const op: Op = { client: ci, input, output: undefined, call: ++now, ret: undefined };
        ops.push(op);
        try {
          if (input.kind === 'put') await c.put(key, te.encode(input.value));
          else if (input.kind === 'delete') await c.delete(key);
          else {
            const v = await c.get(key);
            op.output = v === undefined ? null : td.decode(v);
          }
          if (input.kind !== 'get') op.output = null;
          op.ret = ++now;
        } catch (e) {
          op.error = String(e);
        }
      }
    }),
  );
  region.setCrashPointHook(undefined);
  let images = 0;
  const violations: string[] = [];
  for (const [p, cap] of captures.entries()) {
    for (const img of crashImages(cap.state, { engine: 'random', count: 6, seed: seed * 7919 + p })) {
      images++;
      const r2 = PmemRegion.openImage(materialize(cap.state, img), { tracing: true });
      const nic2 = new Rnic(r2, { drain: 'eager', entropy: seededEntropy(createPrng(p)) });
      const s2 = PilafServer.open(r2, nic2);
      const reader = await PilafClient.connect(new QueuePair(new InProcessFabric(nic2).connect(s2.accept())), s2.address);
      const history = cutHistoryAt(ops, cap.time);
      const finals = new Map<string, string | null>();
      let tt = cap.time + 1;
      for (const key of KEYS) {
        try {
          const v = await reader.get(key);
          const out = v === undefined ? null : td.decode(v);
          finals.set(key, out);
          history.push({ client: -1, input: { kind: 'get', key }, output: out, call: tt++, ret: tt++ });
        } catch (e) {
          violations.push(`point ${p} image ${img.index}: get(${key}): ${String(e)}`);
        }
      }
      for (const d of lostWrites(history, finals)) violations.push(`point ${p} image ${img.index}: ${d}`);
      const lin = checkLinearizable(kvModel, history);
      if (lin.ok === false) violations.push(`point ${p} image ${img.index}: ${lin.reason}`);
      s2.close();
    }
  }
  t.comment(`pilaf seed ${seed}: ${ops.length} operations (${ops.filter((o) => o.ret !== undefined).length} acknowledged), crash points ${captures.length}, images ${images}, violations ${violations.length} — replay: PMRPC_SEED=${seed}`);
  for (const v of violations.slice(0, 5)) t.comment(`  ${v}`);
  t.ok(images >= 500, `${images} images`);
  t.same(violations, []);
  server.close();
});
