// The durable RPC app's recovery decides by its tables (src/apps/rpc/recovery.ts, issue 26 item 4):
// RPC_RECOVERY_TABLE (per ring position) and RPC_CONN_SLOT_TABLE (per connection slot) are the
// tables recovery/ decides by, and an rpc app region whose rings, redo log and connection table
// were written by hand is recovered by the app's recover() position by position as those tables
// say — its report's row counts are the tally of the rows the exported tables give for the inputs
// built, and the bytes (digest log, invalidated slots, the finished release) are what the rows
// call for. docs/rpc.md names the exports; docs/recovery.md lists both tables in their order.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { createPrng, PmemRegion, seededEntropy, VirtualClock } from '../../../pmem/index.js';
import { Rnic } from '../../../flush/index.js';
import { BEHIND_WORD_TABLE, DECISION_TABLE, decideRow, ENTRY_HEADER_BYTES, RecoveryStore, SLOT_TABLE, type DecisionInput, type Effects, type RingEntry } from '../../../recovery/index.js';
import { methodId } from '../../../src/rpc/index.js';
import {
  digestHandler,
  METHOD,
  readDigestLog,
  RPC_CONN_SLOT_TABLE,
  RPC_RECOVERY_TABLE,
  RPC_REPLAY_BEHIND_WORD,
  RPC_BEHIND_WORD_TABLE,
  rpcApp,
  type RpcAppServer,
} from '../../../src/apps/rpc/index.js';

t.test('the exported tables are the ones recovery/ decides by; every row has a why', async (t) => {
  t.equal(RPC_RECOVERY_TABLE, DECISION_TABLE, 'per ring position: recovery/decision-table.ts');
  t.equal(RPC_CONN_SLOT_TABLE, SLOT_TABLE, 'per connection slot: recovery/conn-table.ts');
  t.ok(Object.isFrozen(RPC_RECOVERY_TABLE) && Object.isFrozen(RPC_CONN_SLOT_TABLE));
  for (const r of [...RPC_RECOVERY_TABLE, ...RPC_CONN_SLOT_TABLE]) t.ok(r.why.length > 20, `${r.id} says why`);
  const ids = [...RPC_RECOVERY_TABLE, ...RPC_CONN_SLOT_TABLE].map((r) => r.id);
  t.equal(new Set(ids).size, ids.length, 'row ids unique across both tables (the report counts them in one record)');
  t.equal(RPC_BEHIND_WORD_TABLE, BEHIND_WORD_TABLE, 'per record behind the applied word: recovery/decision-table.ts');
  t.ok(Object.isFrozen(RPC_BEHIND_WORD_TABLE));
  for (const r of RPC_BEHIND_WORD_TABLE) t.ok(r.why.length > 20, `${r.id} says why`);
  const all = [...ids, ...RPC_BEHIND_WORD_TABLE.map((r) => r.id)];
  t.equal(new Set(all).size, all.length, 'row ids unique across the three tables (the report counts them in one record)');
  t.equal(RPC_BEHIND_WORD_TABLE.find((r) => r.action === 'replay')?.id, RPC_REPLAY_BEHIND_WORD, 'the replaying row');
});

t.test('docs/rpc.md names the exports; docs/recovery.md lists both tables in their order', async (t) => {
  const rpc = readFileSync(new URL('../../../docs/rpc.md', import.meta.url), 'utf8');
  for (const name of ['RPC_RECOVERY_TABLE', 'RPC_CONN_SLOT_TABLE', 'src/apps/rpc/recovery.ts']) t.ok(rpc.includes(name), `docs/rpc.md names ${name}`);
  const rec = readFileSync(new URL('../../../docs/recovery.md', import.meta.url), 'utf8');
  const section = (title: string): string => {
    const from = rec.indexOf(`\n### ${title}\n`);
    t.ok(from >= 0, `docs/recovery.md has "${title}"`);
    return rec.slice(from, rec.indexOf('\n#', from + 1));
  };
  const rowIds = (md: string): string[] => [...md.matchAll(/^\| ([a-z][a-z-]+) \|/gm)].map((m) => m[1]!).filter((id) => id !== 'row');
  t.same(rowIds(section('Decision table')), RPC_RECOVERY_TABLE.map((r) => r.id), 'the ring table, in order');
  t.same(rowIds(section('Slot decision table')), RPC_CONN_SLOT_TABLE.map((r) => r.id), 'the slot table, in order');
  t.same(rowIds(section('Records behind the applied word')), RPC_BEHIND_WORD_TABLE.map((r) => r.id), 'the behind-word table, in order');
});

// ---- A state built by hand in an rpc app's region ----------------------------------------------

const LAYOUT = { maxClients: 4, ringSlots: 8, slotBytes: 128, logRecords: 16, recordBytes: 256 };
const OPTS = rpcApp.resolveOptions({ layout: LAYOUT, appBytesMin: 4096 });
const ID = methodId(METHOD);
const te = new TextEncoder();

/** recovery/'s Handler over the digest workload's handler (what DurableRpcServer registers). */
const digest = (e: RingEntry, view: Parameters<typeof digestHandler>[1]): Effects => digestHandler({ clientId: e.clientId, seq: e.seq, method: METHOD, payload: e.payload }, view) as Effects;

function put(region: PmemRegion, at: number, b: Uint8Array): void {
  region.store(at, b);
  region.persist(at, b.length);
}
function putU64(region: PmemRegion, at: number, v: bigint): void {
  region.storeU64(at, v);
  region.persist(at, 8);
}

/**
 * Clients A, B, C registered; then, by hand (durable):
 *   A: seq 1 executed (record applied) under an applied word left at 0 (made durable lazily);
 *      seq 2 executed, its applied flag lost; seq 3 a durable entry, no record; seq 4 a torn
 *      entry; seq 5 a durable entry past it; seq 6–8 never written (seq 9, 10: slots of seq 1, 2)
 *   B: nothing sent (its ring never written)
 *   C: its release decided (release word := its id word), the id word clear lost
 * One connection slot never used.
 */
function build(): { region: PmemRegion; a: number; b: number; c: number; slots: { a: number; c: number }; aOffsets: number[] } {
  const region = PmemRegion.createInMemory(rpcApp.minRegionBytes(OPTS), { tracing: true, entropy: seededEntropy(createPrng(7)) });
  rpcApp.format(region, OPTS);
  const store = RecoveryStore.open(region);
  store.recover();
  const A = store.register(te.encode('a'));
  const B = store.register(te.encode('b'));
  const C = store.register(te.encode('c'));
  const entry = (seq: number): RingEntry => ({ clientId: A.clientId, seq, methodId: ID, payload: te.encode(`request ${seq}`) });
  const place = (seq: number): number => {
    const at = store.entryOffset(A.clientId, seq);
    put(region, at, store.encodeEntry(entry(seq)));
    return at;
  };
  const aOffsets = [0, 1, 2, 3, 4, 5].map((s) => (s === 0 ? 0 : place(s)));
  store.execute(entry(1), digest);
  const { lsn } = store.execute(entry(2), digest);
  store.completeAll();
  putU64(region, store.layout.recordOffset((lsn - 1) % LAYOUT.logRecords), 0n); // seq 2's applied flag lost
  putU64(region, A.creditOffset, 0n); // A's applied word behind its flags
  const torn = region.load(aOffsets[4]!, LAYOUT.slotBytes);
  torn[ENTRY_HEADER_BYTES] = torn[ENTRY_HEADER_BYTES]! ^ 0xff; // a payload byte: the commit word's CRC fails
  put(region, aOffsets[4]!, torn);
  const cLine = store.layout.geometry.connTableOffset + C.connSlot * 64;
  putU64(region, cLine + 16, region.loadU64(cLine)); // C's release decided
  return { region, a: A.clientId, b: B.clientId, c: C.clientId, slots: { a: A.connSlot, c: C.connSlot }, aOffsets };
}

const nics: Rnic[] = [];
t.teardown(() => {
  for (const n of nics) n.close();
});
function open(region: PmemRegion): RpcAppServer {
  const nic = new Rnic(region, { entropy: seededEntropy(createPrng(8)) });
  nics.push(nic);
  return rpcApp.open({ region, nic, clock: new VirtualClock(), schedule: queueMicrotask, entropy: seededEntropy(createPrng(9)) }, OPTS) as RpcAppServer;
}

t.test("the rpc app's recover() takes, position by position, the rows RPC_RECOVERY_TABLE and RPC_CONN_SLOT_TABLE give", async (t) => {
  const { region, a, b, c, aOffsets } = build();
  const v = (checksum: DecisionInput['checksum'], lap: DecisionInput['lap'], seq: DecisionInput['seq'], record: DecisionInput['record']): DecisionInput => ({ checksum, lap, seq, record });
  // The inputs of every position walked, as built (a torn or never-written slot's lap is what
  // recovery/ring.ts reads from it: no row of an invalid checksum reads the lap).
  const walked: DecisionInput[] = [
    v('valid', 'expected', 'next', 'applied'), //                A 1
    v('valid', 'expected', 'next', 'complete-unapplied'), //     A 2
    v('valid', 'expected', 'next', 'none'), //                   A 3
    v('invalid', 'other', 'inPrefix', 'none'), //                A 4 (torn)
    v('valid', 'expected', 'pastGap', 'none'), //                A 5
    ...[6, 7, 8].map(() => v('invalid', 'other', 'pastGap', 'none')), // A 6–8
    v('valid', 'previous', 'pastGap', 'none'), //                A 9 (seq 1's slot)
    v('valid', 'previous', 'pastGap', 'none'), //                A 10 (seq 2's slot)
    v('invalid', 'other', 'next', 'none'), //                    B 1
    ...[2, 3, 4, 5, 6, 7, 8].map(() => v('invalid', 'other', 'pastGap', 'none')), // B 2–8
  ];
  const want: Record<string, number> = { 'slot-live': 2, 'release-finish': 1, 'slot-free': 1 };
  for (const input of walked) {
    const id = decideRow('rpc recovery table', RPC_RECOVERY_TABLE, input).id;
    want[id] = (want[id] ?? 0) + 1;
  }
  t.same(want, {
    'slot-live': 2, 'release-finish': 1, 'slot-free': 1,
    'applied-skip': 1, replay: 1, reexecute: 1, 'gap-torn': 2, 'beyond-gap-entry': 1, 'beyond-gap-torn': 10, 'beyond-gap-previous-lap': 2,
  }, 'the rows the exported tables give for the state built');
  for (const id of Object.keys(want)) t.ok([...RPC_RECOVERY_TABLE, ...RPC_CONN_SLOT_TABLE].some((r) => r.id === id), `${id} is a row of the exported tables`);

  const s = open(region);
  const r = s.recover();
  t.same(r.rows, want, "recover()'s row counts are the exported tables' rows for every slot and position");
  t.match(r, { app: 'rpc', replayed: 1, reexecuted: 1, invalidated: 2 });
  t.same(
    r.clients.map((x) => [x.clientId, x.appliedSeq, x.resumeSeq]).sort((p, q) => p[0]! - q[0]!),
    [[a, 2, 4], [b, 0, 1]],
    'A: applied up to its replayed seq 2, resumes at the torn seq 4; B resumes at 1; C released',
  );
  // The bytes the rows call for.
  t.same(readDigestLog(s.store.appView).entries.map((e) => [e.clientId, e.seq, e.position]), [[a, 1, 0], [a, 2, 1], [a, 3, 2]], 'seq 1 kept, seq 2 replayed, seq 3 re-executed, in order');
  const media = PmemRegion.openImage(region.crashState().media, { tracing: false });
  for (const p of [region, media]) {
    t.equal(p.loadU64(aOffsets[4]!), 0n, `${p === region ? 'cache' : 'media'}: the torn seq 4 invalidated (gap-torn)`);
    t.equal(p.loadU64(aOffsets[5]!), 0n, `${p === region ? 'cache' : 'media'}: seq 5 past the gap invalidated (beyond-gap-entry)`);
  }
  t.notOk(s.store.conn.entries().some((e) => e.clientId === c), 'C released (release-finish)');
  s.close();
});
