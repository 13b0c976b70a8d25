// Coverage of PRISM-TX's recovery table as data (TX_RECOVERY_TABLE, src/apps/tx/recovery.ts;
// docs/tx.md "Recovery of one shard — decision table R"): every input of every scope matches exactly
// one row; every row is built in PM by hand (records, slots, items, marks), recovered, and its
// outcome read back from the bytes; the last test fails if some row was never exercised. Then the
// invariants recovery checks before it writes (checkTxPreparedRecords): each violation is built in
// PM and recovery must stop with PMRPC_ERR_INVARIANT, every byte of the region unchanged.
import t from 'tap';
import { PmemRegion } from '../../../pmem/index.js';
import { decideRow } from '../../../recovery/index.js';
import { Rnic } from '../../../flush/index.js';
import {
  encodeBody, encodeItem, encodeSlot, ENTRY_READ, ENTRY_WRITE, H_ABORTED, H_COMMITTED, H_FENCED, H_PREPARED, hWord, ITEM_BYTES, makeTxid, RECORD_BODY, recordOffset, slotOffset, txApp,
  type RecordEntry, type TxAppServer, type TxFaults,
} from '../../../src/apps/tx/index.js';
import { ITEM_DEAD, ITEM_MARK_WORD } from '../../../src/apps/tx/layout.js';
import {
  allTxRecoveryInputs, checkTxPreparedRecords, storeRecoverySlot, decideTxRecovery, matchingTxRecoveryRows, TX_RECOVERY_TABLE, txRecoveryRows, type TxRecoveryScope,
} from '../../../src/apps/tx/recovery.js';

const te = new TextEncoder();
const T = makeTxid(0, 1, 7);
const U = makeTxid(1, 1, 3);
const TS = (1000n << 8n) | 0n;
const UTS = (1000n << 8n) | 1n;
const BOTH = 0b11n;
const INVARIANT = { code: 'PMRPC_ERR_INVARIANT' };
const SCOPES: TxRecoveryScope[] = ['record', 'entry', 'slot', 'item'];
// Two shards; shard 0 holds keys 0 and 2 (slots 0 and 1).
const opts = (faults: Partial<TxFaults> = {}) => txApp.resolveOptions({ shard: 0, shards: 2, keysPerShard: 2, clients: 4, items: 32, faults });

t.test('every input of every scope matches exactly one row; every row matches some input; ids unique, each with a why', async (t) => {
  const ids = new Set<string>();
  for (const r of TX_RECOVERY_TABLE) {
    t.notOk(ids.has(r.id), `id ${r.id} once`);
    ids.add(r.id);
    t.ok(r.why.length > 40, `${r.id} says why`);
  }
  for (const scope of SCOPES) {
    const used = new Set<string>();
    for (const input of allTxRecoveryInputs(scope)) {
      const rows = matchingTxRecoveryRows(scope, input as never);
      t.equal(rows.length, 1, `${scope} ${JSON.stringify(input)}: ${rows.map((r) => r.id).join(', ') || 'no row'}`);
      for (const r of rows) used.add(r.id);
    }
    t.same([...used].sort(), txRecoveryRows(scope).map((r) => r.id).sort(), `${scope}: no row unreachable by its inputs`);
  }
  t.equal(TX_RECOVERY_TABLE.length, 14);
});

t.test('a hole in the table is an assertion, not a silent choice', async (t) => {
  const holed = TX_RECOVERY_TABLE.filter((r) => r.id !== 'R3');
  t.same(matchingTxRecoveryRows('slot', { lock: 'unbacked' }, holed), [], 'no row for an unbacked lock');
  t.throws(() => decideRow('holed slot table', holed.filter((r) => r.scope === 'slot'), { lock: 'unbacked' }), { ...INVARIANT, message: /0 rows match/ }, 'deciding over the hole stops');
  t.equal(decideTxRecovery('slot', { lock: 'unbacked' }).id, 'R3', 'the real table has its row');
});

// ---- Every row built in PM -------------------------------------------------------------------

const nics: Rnic[] = [];
t.teardown(() => {
  for (const n of nics) n.detach();
});
function host(region: PmemRegion) {
  const nic = new Rnic(region);
  nics.push(nic);
  return { region, nic, clock: { nowMs: () => 0, nowNs: () => 0n, setTimer: () => ({ cancel() {} }) }, schedule: queueMicrotask, entropy: { fill: (b: Uint8Array) => b.fill(1) } } as never;
}
function put(srv: TxAppServer, at: number, b: Uint8Array): void {
  srv.region.store(at, b);
  srv.region.persist(at, b.length);
}
function setH(srv: TxAppServer, c: number, h: bigint): void {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, h, true);
  put(srv, recordOffset(srv.geometry, c), b);
}
const itemAt = (srv: TxAppServer, i: number): number => srv.geometry.arenaOffset + i * ITEM_BYTES;
/** A new item of (key, ts) at arena item `i`. */
function newItem(srv: TxAppServer, i: number, key: number, ts: bigint): number {
  const p = itemAt(srv, i);
  put(srv, p, encodeItem({ ts, key, value: te.encode(`k${key}@${ts}`) }));
  return p;
}
function setSlot(srv: TxAppServer, index: number, s: Partial<ReturnType<TxAppServer['slot']>>): void {
  put(srv, slotOffset(srv.geometry, index), encodeSlot({ ...srv.slot(index), ...s }).subarray(0, 40));
}
function record(srv: TxAppServer, c: number, txid: bigint, ts: bigint, state: bigint, entries: RecordEntry[]): void {
  put(srv, recordOffset(srv.geometry, c) + RECORD_BODY, encodeBody({ txid, ts, participants: BOTH, entries }));
  setH(srv, c, hWord(txid, state));
}

/** Formats shard 0, builds a state by hand, reopens it as after a crash; recover() is the caller's. */
function built(build: (srv: TxAppServer) => void, faults: Partial<TxFaults> = {}): TxAppServer {
  const region = PmemRegion.createInMemory(txApp.minRegionBytes(opts()) + 64);
  txApp.format(region, opts());
  build(txApp.open(host(region), opts()) as TxAppServer);
  return txApp.open(host(region), opts(faults)) as TxAppServer;
}
const seen = new Map<string, number>();
function recovered(build: (srv: TxAppServer) => void): TxAppServer {
  const srv = built(build);
  srv.recover();
  for (const [id, n] of Object.entries(srv.lastRecovery!.rows)) seen.set(id, (seen.get(id) ?? 0) + n);
  return srv;
}
const rows = (srv: TxAppServer): Record<string, number> => srv.lastRecovery!.rows;

t.test('R5: no record, or a final one — nothing written to H', async (t) => {
  for (const st of [H_COMMITTED, H_ABORTED, H_FENCED]) {
    const srv = recovered((s) => setH(s, 0, hWord(T, st)));
    t.equal(srv.record(0).h, hWord(T, st));
    t.equal(rows(srv).R5, 4, 'every client slot: R5');
  }
});

t.test('R2: PREPARED(T) over a body not T\'s — H := FENCED(T) in PM', async (t) => {
  const srv = recovered((s) => {
    const p = newItem(s, 31, 0, TS);
    record(s, 0, T, TS, H_PREPARED, [{ key: 0, kind: ENTRY_WRITE, newPtr: p, oldCt: 0n }]);
    put(s, p + 24, te.encode('torn')); // T's item torn: the address does not name a whole item
  });
  t.equal(srv.record(0).h, hWord(T, H_FENCED));
  t.same(rows(srv).R2, 1);
  t.equal(rows(srv).R6, undefined);
});

t.test('R6, R1.kept, R3.kept (backed): a whole PREPARED record over a settled slot — kept, nothing written', async (t) => {
  const srv = recovered((s) => {
    const p = newItem(s, 31, 0, TS);
    setSlot(s, 0, { w: TS, lock: T });
    record(s, 0, T, TS, H_PREPARED, [{ key: 0, kind: ENTRY_WRITE, newPtr: p, oldCt: 0n }]);
  });
  t.equal(srv.record(0).h, hWord(T, H_PREPARED));
  t.same(srv.slot(0), { w: TS, ct: 0n, lock: T, ptr: itemAt(srv, 0), bound: ITEM_BYTES });
  t.equal(rows(srv).R6, 1);
  t.equal(rows(srv)['R1.kept'], 1);
  t.equal(rows(srv)['R3.kept'], 2, 'slot 0 backed, slot 1 unlocked');
  t.equal(srv.lastRecovery!.slotsRepaired, 0);
});

t.test('R1.installed: the ptr word is T\'s item, CT torn — CT := ts, L := T in PM', async (t) => {
  const srv = recovered((s) => {
    const p = newItem(s, 31, 0, TS);
    setSlot(s, 0, { w: TS, ptr: p, lock: 0n }); // CT still the old one, the lock lost
    record(s, 0, T, TS, H_PREPARED, [{ key: 0, kind: ENTRY_WRITE, newPtr: p, oldCt: 0n }]);
  });
  t.same(srv.slot(0), { w: TS, ct: TS, lock: T, ptr: itemAt(srv, 31), bound: ITEM_BYTES });
  t.equal(rows(srv)['R1.installed'], 1);
});

t.test('R1.not-installed: CT of T\'s install reached PM, its ptr word did not — CT := oldCT, W := ts in PM', async (t) => {
  const srv = recovered((s) => {
    const p = newItem(s, 31, 0, TS);
    setSlot(s, 0, { w: 0n, ct: TS, lock: T });
    record(s, 0, T, TS, H_PREPARED, [{ key: 0, kind: ENTRY_WRITE, newPtr: p, oldCt: 0n }]);
  });
  t.same(srv.slot(0), { w: TS, ct: 0n, lock: T, ptr: itemAt(srv, 0), bound: ITEM_BYTES });
  t.equal(rows(srv)['R1.not-installed'], 1);
});

t.test("R1' / R1'.kept: read entries — W raised to ts where below, left where not", async (t) => {
  const srv = recovered((s) => {
    setSlot(s, 1, { w: TS + 256n });
    record(s, 0, T, TS, H_PREPARED, [{ key: 0, kind: ENTRY_READ, newPtr: 0, oldCt: 0n }, { key: 2, kind: ENTRY_READ, newPtr: 0, oldCt: 0n }]);
  });
  t.equal(srv.slot(0).w, TS, 'key 0: W := ts');
  t.equal(srv.slot(1).w, TS + 256n, 'key 2: W above ts, kept');
  t.equal(rows(srv)["R1'"], 1);
  t.equal(rows(srv)["R1'.kept"], 1);
});

t.test('R3: a lock no PREPARED record backs — L := 0 in PM', async (t) => {
  const srv = recovered((s) => {
    setSlot(s, 1, { lock: U });
    setH(s, 1, hWord(U, H_COMMITTED));
  });
  t.equal(srv.slot(1).lock, 0n);
  t.equal(rows(srv).R3, 1);
  t.equal(rows(srv)['R3.kept'], 1);
});

t.test('R4 / R4.marked / R4.kept: unreached items are freed, a dead mark cleared in PM; reached ones kept', async (t) => {
  let marked = 0;
  const srv = recovered((s) => {
    const p = newItem(s, 20, 0, TS);
    const w = s.region.loadU64(p + ITEM_MARK_WORD);
    s.region.storeU64(p + ITEM_MARK_WORD, (ITEM_DEAD << 32n) | (w & 0xffffffffn));
    s.region.persist(p + ITEM_MARK_WORD, 8);
    marked = p;
  });
  t.equal(srv.region.loadU64(marked + ITEM_MARK_WORD) >> 32n, 0n, 'the dead mark cleared');
  t.equal(rows(srv)['R4.marked'], 1);
  t.equal(rows(srv)['R4.kept'], 2, "the two slots' items");
  t.equal(rows(srv).R4, 32 - 2 - 1);
  t.ok(srv.freeItems().includes(marked), 'on the free list');
  t.notOk(srv.freeItems().includes(itemAt(srv, 0)), "a slot's item is not");
});

// ---- Records carrying their new values (docs/tx.md "New values in the record") ------------------

/** A PREPARED record of T carrying the value of key 0 (and reading key 2): its item bytes in the body. */
function valuesRecord(srv: TxAppServer, c: number, txid: bigint, ts: bigint, value = 'v'): Uint8Array {
  const item = encodeItem({ ts, key: 0, value: te.encode(value) });
  put(srv, recordOffset(srv.geometry, c) + RECORD_BODY, encodeBody({ txid, ts, participants: BOTH, values: true, entries: [{ key: 0, kind: ENTRY_WRITE, newPtr: 0, oldCt: 0n, item }, { key: 2, kind: ENTRY_READ, newPtr: 0, oldCt: 0n }] }));
  setH(srv, c, hWord(txid, H_PREPARED));
  return item;
}

t.test('R6.values, R1.not-installed: a PREPARED record carrying its values, no install landed — kept, slot held by T, and an item round 2 ALLOCATEd but never installed freed (R4)', async (t) => {
  let orphan = 0;
  const srv = recovered((s) => {
    valuesRecord(s, 0, T, TS);
    setSlot(s, 0, { w: TS, lock: 0n }); // the lock not durable
    orphan = newItem(s, 31, 0, TS); // round 2 ALLOCATEd (and FLUSHed) T's value; its install never landed
  });
  t.equal(srv.record(0).h, hWord(T, H_PREPARED), 'kept for the resolver');
  t.equal(srv.record(0).body?.values, true);
  t.same(srv.slot(0), { w: TS, ct: 0n, lock: T, ptr: itemAt(srv, 0), bound: ITEM_BYTES });
  t.equal(rows(srv)['R6.values'], 1);
  t.equal(rows(srv).R6, undefined);
  t.equal(rows(srv)['R1.not-installed'], 1);
  t.ok(srv.freeItems().includes(orphan), 'the never-installed item is on the free list');
  t.same([...srv.prepared().keys()], [T]);
});

t.test("R6.values, R1.installed: the slot's item is T's (its key and ts), CT torn — CT := ts, L := T in PM", async (t) => {
  const srv = recovered((s) => {
    valuesRecord(s, 0, T, TS);
    const p = newItem(s, 30, 0, TS);
    setSlot(s, 0, { w: TS, ptr: p, lock: 0n });
  });
  t.same(srv.slot(0), { w: TS, ct: TS, lock: T, ptr: itemAt(srv, 30), bound: ITEM_BYTES });
  t.equal(rows(srv)['R6.values'], 1);
  t.equal(rows(srv)['R1.installed'], 1);
  t.notOk(srv.freeItems().includes(itemAt(srv, 30)), 'the installed item is reached');
});

t.test("R2: a PREPARED record whose carried values are torn (the crc covers them) — H := FENCED(T) in PM", async (t) => {
  const srv = recovered((s) => {
    valuesRecord(s, 0, T, TS, 'value-to-tear');
    const at = recordOffset(s.geometry, 0) + RECORD_BODY + 32 + 2 * 16 + 24; // the value's first byte
    put(s, at, te.encode('X'));
  });
  t.equal(srv.record(0).h, hWord(T, H_FENCED));
  t.equal(rows(srv).R2, 1);
  t.equal(rows(srv)['R6.values'], undefined);
});

// ---- Invariants before recovery writes ---------------------------------------------------------

/** Builds the state, then recover() must throw PMRPC_ERR_INVARIANT with every byte of the region unchanged. */
function stops(t: Tap.Test, what: string, build: (srv: TxAppServer) => void, message: RegExp): void {
  const srv = built(build);
  const before = srv.region.load(0, srv.region.sizeBytes).slice();
  t.throws(() => srv.recover(), { ...INVARIANT, message }, what);
  t.same(Buffer.compare(Buffer.from(srv.region.load(0, srv.region.sizeBytes)), Buffer.from(before)), 0, `${what}: the region unchanged`);
}

t.test('invariant: one slot held by the write entries of two PREPARED records — stopped, nothing written', async (t) => {
  stops(t, 'two holders', (s) => {
    const p = newItem(s, 31, 0, TS);
    const q = newItem(s, 30, 0, UTS);
    setSlot(s, 0, { w: UTS, lock: T });
    setSlot(s, 1, { lock: U }); // an unbacked lock R3 would release — it must not be
    record(s, 0, T, TS, H_PREPARED, [{ key: 0, kind: ENTRY_WRITE, newPtr: p, oldCt: 0n }]);
    record(s, 1, U, UTS, H_PREPARED, [{ key: 0, kind: ENTRY_WRITE, newPtr: q, oldCt: 0n }]);
  }, /key 0 is held by the PREPARED records of both/);
});

t.test("invariant: a write entry's oldCT not below T's ts — stopped, nothing written", async (t) => {
  stops(t, 'oldCT ≥ ts', (s) => {
    const old = newItem(s, 29, 0, TS + 256n);
    setSlot(s, 0, { w: TS + 256n, ct: TS + 256n, ptr: old, lock: 0n });
    const p = newItem(s, 31, 0, TS);
    record(s, 0, T, TS, H_PREPARED, [{ key: 0, kind: ENTRY_WRITE, newPtr: p, oldCt: TS + 256n }]);
  }, /writes key 0 over CT \d+, not below its ts/);
});

t.test("invariant: a PREPARED record's entry outside the shard's slot table — stopped, nothing written", async (t) => {
  stops(t, 'key outside', (s) => {
    setSlot(s, 0, { lock: U });
    record(s, 0, T, TS, H_PREPARED, [{ key: 4, kind: ENTRY_READ, newPtr: 0, oldCt: 0n }]);
  }, /names key 4, outside shard 0's slot table/);
});

t.test("invariant: a recovery slot store never moves the ptr word nor lowers W — stopped, nothing written (checkTxSlotWrite alone would pass both)", async (t) => {
  const srv = recovered((s) => {
    newItem(s, 31, 0, 0n); // another whole item of key 0, ts 0: the slot's value by checkTxSlotWrite
    setSlot(s, 0, { w: TS });
  });
  const old = srv.slot(0);
  const before = srv.region.load(0, srv.region.sizeBytes).slice();
  const same = (): number => Buffer.compare(Buffer.from(srv.region.load(0, srv.region.sizeBytes)), Buffer.from(before));
  t.throws(() => storeRecoverySlot(srv, 0, old, { ...old, ptr: itemAt(srv, 31) }), { ...INVARIANT, message: /move the slot's pointer/ });
  t.equal(same(), 0, 'pointer: the region unchanged');
  t.throws(() => storeRecoverySlot(srv, 0, old, { ...old, w: 0n }), { ...INVARIANT, message: /lower W from/ });
  t.equal(same(), 0, 'W: the region unchanged');
  storeRecoverySlot(srv, 0, old, { ...old, lock: U });
  t.equal(srv.slot(0).lock, U, 'the neighbour (a lock store) is written');
});

t.test('checkTxPreparedRecords: the neighbours of each violation pass', async (t) => {
  const g = built(() => undefined).geometry;
  const w = (key: number, oldCt: bigint): RecordEntry => ({ key, kind: ENTRY_WRITE, newPtr: 0, oldCt });
  t.doesNotThrow(() => checkTxPreparedRecords(g, new Map([[T, { txid: T, ts: TS, participants: BOTH, entries: [w(0, TS - 1n), w(2, 0n), w(5, TS + 9n)] }]])), "another shard's key is not this shard's to check");
  t.doesNotThrow(() => checkTxPreparedRecords(g, new Map([[T, { txid: T, ts: TS, participants: BOTH, entries: [w(0, 0n)] }], [U, { txid: U, ts: UTS, participants: BOTH, entries: [{ key: 0, kind: ENTRY_READ, newPtr: 0, oldCt: 0n }, w(2, 0n)] }]])), 'a reader and a writer of one key; two writers of two keys');
  t.throws(() => checkTxPreparedRecords(g, new Map([[T, { txid: T, ts: TS, participants: BOTH, entries: [w(0, TS)] }]])), INVARIANT, 'oldCT = ts');
});

t.test('every row of TX_RECOVERY_TABLE was exercised by a state built in PM', async (t) => {
  for (const r of TX_RECOVERY_TABLE) t.ok((seen.get(r.id) ?? 0) > 0, `${r.scope} row ${r.id} exercised (${seen.get(r.id) ?? 0})`);
  t.same([...seen.keys()].filter((id) => !TX_RECOVERY_TABLE.some((r) => r.id === id)), [], 'no count for an id outside the table');
});
