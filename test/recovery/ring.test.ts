// Rings: entry encoding, polling with checksum validation, laps and wrap-around, credits,
// torn entries, overruns, invalidation.
import t from 'tap';
import { RecoveryStore, encodeEntry, inspectSlot, invalidateSlot, lapOf, maxPayloadBytes, Ring, checkCredit } from '../../recovery/index.js';
import { codeOf, newRegion, SMALL } from './fixtures/util.js';

function setup() {
  const region = newRegion();
  const store = RecoveryStore.format(region, { ...SMALL, partialPollsMax: 3 });
  const { clientId } = store.register();
  const place = (seq: number, payload = new Uint8Array([seq, 1, 2, 3])): Uint8Array => {
    const b = store.encodeEntry({ clientId, seq, methodId: 9, payload });
    region.store(store.entryOffset(clientId, seq), b);
    return b;
  };
  const apply = (seq: number): void => void store.commit(clientId, seq, { images: [] });
  return { region, store, clientId, place, apply };
}

t.test('encode, place, poll; FIFO; wrap-around by lap', async (t) => {
  const { store, clientId, place, apply } = setup();
  const ring = store.ring(clientId);
  t.same(ring.poll(), { kind: 'empty' });
  for (let seq = 1; seq <= 10; seq++) {
    store.checkCredit(clientId, seq);
    place(seq);
    const p = ring.poll();
    t.equal(p.kind, 'entry');
    if (p.kind === 'entry') {
      t.same([p.entry.seq, p.entry.methodId, [...p.entry.payload]], [seq, 9, [seq, 1, 2, 3]]);
      t.equal(p.slotOffset, store.layout.ringOffset(0) + ((seq - 1) % 4) * 128);
    }
    t.same(ring.poll(), { kind: 'empty' }, 'the previous lap entry in the next slot is not new');
    apply(seq);
  }
  t.equal(lapOf(10, 4), 3);
  t.equal(Number(store.region.loadU64(store.client(clientId).creditOffset)), 10, 'credit word = applied sequence');
});

t.test('credits: PMRPC_ERR_RING_FULL until the entry of the previous lap is applied', async (t) => {
  const { store, clientId, place, apply } = setup();
  for (let seq = 1; seq <= 4; seq++) place(seq);
  t.equal(codeOf(() => store.checkCredit(clientId, 5)), 'PMRPC_ERR_RING_FULL');
  const ring = store.ring(clientId);
  const p = ring.poll();
  t.equal(p.kind, 'entry');
  t.equal(codeOf(() => store.checkCredit(clientId, 5)), 'PMRPC_ERR_RING_FULL', 'consumed is not enough: applied is');
  apply(1);
  t.equal(codeOf(() => store.checkCredit(clientId, 5)), undefined);
  t.equal(codeOf(() => checkCredit(9, 4, 4)), 'PMRPC_ERR_RING_FULL');
});

t.test('torn entry: partial at poll (bounded), then PMRPC_ERR_ENTRY_TORN; completed entries validate', async (t) => {
  const { region, store, clientId } = setup();
  const bytes = store.encodeEntry({ clientId, seq: 1, methodId: 1, payload: new Uint8Array(40).fill(5) });
  const off = store.entryOffset(clientId, 1);
  region.store(off, bytes.subarray(0, 24)); // commit word and part of the header only
  const ring = store.ring(clientId);
  for (let i = 1; i <= 3; i++) t.same(ring.poll(), { kind: 'partial', seq: 1, polls: i });
  t.equal(codeOf(() => ring.poll()), 'PMRPC_ERR_ENTRY_TORN');
  region.store(off + 24, bytes.subarray(24));
  t.equal(ring.poll().kind, 'entry', 'once every word arrived the checksum matches');
});

t.test('a flipped payload byte fails the checksum', async (t) => {
  const { region, store, clientId, place } = setup();
  place(1, new Uint8Array(50).fill(3));
  const off = store.entryOffset(clientId, 1);
  region.storeU8(off + 60, 4);
  const s = inspectSlot(region, off, store.geometry, { clientId, seq: 1 });
  t.same([s.checksumValid, s.lap], [false, 'expected']);
  t.equal(store.ring(clientId).poll().kind, 'partial');
  const trusting = inspectSlot(region, off, store.geometry, { clientId, seq: 1 }, false);
  t.ok(trusting.entry, 'without verification (fault switch) the torn entry would be consumed');
});

t.test('an entry placed beyond the credits: PMRPC_ERR_RING_OVERRUN; other clients never validate', async (t) => {
  const { region, store, clientId, place } = setup();
  place(5); // slot of seq 1, lap 2
  t.equal(codeOf(() => store.ring(clientId).poll()), 'PMRPC_ERR_RING_OVERRUN');
  const other = store.register().clientId;
  const b = store.encodeEntry({ clientId: other, seq: 1, methodId: 1, payload: new Uint8Array(4) });
  const off = store.entryOffset(clientId, 1);
  region.store(off, b);
  const s = inspectSlot(region, off, store.geometry, { clientId, seq: 1 });
  t.equal(s.checksumValid, false, "another client's entry is not valid for this ring");
});

t.test("a reused connection slot: the former client's entries read as empty, never as torn", async (t) => {
  const { region, store, clientId, place, apply } = setup();
  for (let seq = 1; seq <= 3; seq++) {
    place(seq);
    const p = store.ring(clientId).poll();
    if (p.kind === 'entry') apply(seq);
  }
  store.release(clientId);
  const next = store.register();
  t.equal(next.connSlot, 0, 'same slot, same ring');
  t.not(next.clientId, clientId);
  const ring = store.ring(next.clientId);
  for (let i = 0; i < 5; i++) t.same(ring.poll(), { kind: 'empty' });
  const b = store.encodeEntry({ clientId: next.clientId, seq: 1, methodId: 1, payload: new Uint8Array([1]) });
  region.store(store.entryOffset(next.clientId, 1), b);
  t.equal(ring.poll().kind, 'entry');
});

t.test('invalidation makes a slot empty, durably', async (t) => {
  const { region, store, clientId, place } = setup();
  place(1);
  const off = store.entryOffset(clientId, 1);
  invalidateSlot(region, off);
  t.same(store.ring(clientId).poll(), { kind: 'empty' });
  t.equal(region.dirtyLines, 0, 'persisted');
});

t.test('argument validation and PMRPC_ERR_TOO_LARGE', async (t) => {
  const g = { slotBytes: 128, ringSlots: 4 };
  t.equal(maxPayloadBytes(128), 96);
  t.equal(codeOf(() => encodeEntry({ clientId: 1, seq: 1, methodId: 0, payload: new Uint8Array(97) }, g)), 'PMRPC_ERR_TOO_LARGE');
  t.equal(encodeEntry({ clientId: 1, seq: 1, methodId: 0, payload: new Uint8Array(96) }, g).length, 128);
  t.throws(() => encodeEntry({ clientId: 0, seq: 1, methodId: 0, payload: new Uint8Array(1) }, g), new RangeError('clientId must be in [1, 4294967295], got 0'));
  t.throws(() => encodeEntry({ clientId: 1, seq: 0, methodId: 0, payload: new Uint8Array(1) }, g), new RangeError('seq must be in [1, 17179869180], got 0'));
  t.throws(() => encodeEntry({ clientId: 1, seq: 1, methodId: 0, payload: [1] as never }, g), new TypeError('payload must be a Uint8Array'));
  const { store, clientId } = setup();
  t.throws(() => new Ring(store.layout, 0, clientId, 1, { partialPollsMax: 0 }), new RangeError('partialPollsMax must be a positive integer, got 0'));
  t.throws(() => new Ring(store.layout, 0, clientId, 1, { faults: { skipEverything: true } as never }), new TypeError('unknown fault switch skipEverything'));
});
