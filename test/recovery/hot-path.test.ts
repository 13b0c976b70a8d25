// The fast paths of the redo log and the ring (issue 16): commit reads its record back once, in
// place; slot reuse judges the old record on its header words; poll judges the expected entry on
// its header words. Each check they keep is shown to catch what it is there for, and poll's
// verdict is compared with inspectSlot's (the full classification) on seeded slot states.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crashImages, createPrng, materialize, PmemRegion, seededEntropy } from '../../pmem/index.js';
import { encodeRecord, inspectSlot, layoutBytes, readRecord, RecoveryStore } from '../../recovery/index.js';
import { codeOf, newRegion, SMALL } from './fixtures/util.js';

const u64 = (v: number): Uint8Array => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setUint32(0, v, true);
  return b;
};

t.test('commit reads its record back: a store that does not land as written is caught', async (t) => {
  const region = newRegion();
  const store = RecoveryStore.format(region, SMALL);
  const { clientId } = store.register();
  store.commit(clientId, 1, { images: [{ offset: 0, bytes: u64(1) }] });
  const rec = store.layout.recordOffset(1);
  const store0 = region.store.bind(region);
  // One bit of the record's body (its image bytes) lands wrong.
  region.store = (offset: number, bytes: Uint8Array): void => {
    store0(offset, bytes);
    if (offset === rec + 8) region.storeU8(rec + 60, region.loadU8(rec + 60) ^ 1);
  };
  t.throws(() => store.commit(clientId, 2, { images: [{ offset: 8, bytes: u64(2) }] }), /record 2 does not read back as written/);
  region.store = store0;
  // A header word landing wrong is caught too.
  region.store = (offset: number, bytes: Uint8Array): void => {
    store0(offset, bytes);
    if (offset === rec + 8) region.storeU32(rec + 24, 77);
  };
  t.throws(() => store.commit(clientId, 2, { images: [{ offset: 8, bytes: u64(2) }] }), /record 2 does not read back as written/);
});

t.test('slot reuse: a record rewritten behind the log in a slot it wrote is judged from the slot, not from memory', async (t) => {
  const region = newRegion();
  const store = RecoveryStore.format(region, SMALL);
  const { clientId } = store.register();
  for (let seq = 1; seq <= 4; seq++) store.commit(clientId, seq, { images: [{ offset: 8 * seq, bytes: u64(seq) }] });
  t.equal(readRecord(store.layout, 0).state, 'applied');
  // Slot 0 (LSN 1, applied, written by this log) now holds a complete record that is not applied.
  const off = store.layout.recordOffset(0);
  region.storeU64Atomic(off, 0n);
  region.store(off + 8, encodeRecord(1, clientId, 1, { images: [] }).subarray(8));
  t.equal(readRecord(store.layout, 0).state, 'complete-unapplied');
  t.equal(codeOf(() => store.commit(clientId, 5, { images: [] })), 'PMRPC_ERR_LOG_FULL', 'never overwritten');
  // Same LSN and flag, another client word: the slow path reads it (torn: its checksum fails) and reuses the slot.
  store.log.apply(readRecord(store.layout, 0));
  region.storeU32(off + 16, clientId + 1);
  t.equal(readRecord(store.layout, 0).state, 'incomplete');
  t.equal(store.commit(clientId, 5, { images: [] }).lsn, 5);
});

t.test('slot reuse makes the old record\'s client word durable (fast path too)', async (t) => {
  const region = newRegion(SMALL, 0, true);
  const store = RecoveryStore.format(region, SMALL);
  const { clientId } = store.register();
  const creditWord = store.conn.creditOffset(clientId);
  for (let seq = 1; seq <= 5; seq++) store.commit(clientId, seq, { images: [] });
  // The reuse of slot 0 (at LSN 5) persisted the applied word as it was then (seq 4): on media.
  const st = region.crashState();
  const [media] = [...crashImages(st, { engine: 'none' })];
  const crashed = PmemRegion.openImage(materialize(st, media!));
  t.ok(Number(crashed.loadU64(creditWord)) >= 4, 'the applied word reached media before the slot was reused');
});

t.test('poll judges the expected entry like inspectSlot, on seeded slot states', async (t) => {
  const seed = Number(process.env.PMRPC_SEED ?? 16);
  t.comment(`seed ${seed} (PMRPC_SEED=${seed} replays)`);
  const prng = createPrng(seed);
  const region = newRegion();
  const store = RecoveryStore.format(region, SMALL);
  const { clientId } = store.register();
  const g = store.geometry;
  let checked = 0;
  for (let round = 0; round < 400; round++) {
    const ring = store.ring(clientId);
    const seq = ring.nextSeq;
    const off = ring.slotOffset(seq);
    const payload = new Uint8Array(prng.int(0, 40)).map(() => prng.int(0, 255));
    const kind = prng.int(0, 5);
    let bytes = store.encodeEntry({ clientId, seq, methodId: 3, payload });
    if (kind === 1 && seq > g.ringSlots) bytes = store.encodeEntry({ clientId, seq: seq - g.ringSlots, methodId: 3, payload }); // previous lap
    if (kind === 2) bytes = store.encodeEntry({ clientId: clientId + 1, seq, methodId: 3, payload }); // a former occupant
    region.fill(off, g.slotBytes, 0);
    region.store(off, bytes);
    if (kind === 3) region.storeU8(off + prng.int(8, bytes.length - 1), prng.int(0, 255)); // a byte that has not arrived yet
    if (kind === 4) region.storeU32(off + 4 * prng.int(0, 7), prng.int(0, 0xffff)); // a header word that has not
    const judged = inspectSlot(region, off, g, { clientId, seq });
    const want = judged.entry !== undefined ? 'entry' : judged.commitZero || judged.foreign || (judged.checksumValid && judged.lap === 'previous') ? 'empty' : judged.checksumValid ? 'overrun' : 'partial';
    let got: string;
    try {
      const p = ring.poll();
      got = p.kind;
      if (p.kind === 'entry') {
        t.same([...p.entry.payload], [...judged.entry!.payload], `round ${round}: the entry's payload`);
        t.equal(p.entry.methodId, judged.entry!.methodId);
        region.storeU8(off + 32, 0xaa ^ (p.entry.payload[0] ?? 0)); // the entry is a copy: later stores do not reach it
        t.same([...p.entry.payload], [...judged.entry!.payload]);
        store.commit(clientId, seq, { images: [] });
      }
    } catch (e) {
      got = (e as { code?: string }).code === 'PMRPC_ERR_RING_OVERRUN' ? 'overrun' : String(e);
    }
    if (got !== want) t.fail(`round ${round} (seed ${seed}): poll says ${got}, inspectSlot ${want}`);
    checked++;
    if (got === 'overrun' || got === 'partial') {
      // Put the right entry in place so the ring goes on (the partial counter is reset by it).
      region.fill(off, g.slotBytes, 0);
      region.store(off, store.encodeEntry({ clientId, seq, methodId: 3, payload }));
      t.equal(ring.poll().kind, 'entry');
      store.commit(clientId, seq, { images: [] });
    }
  }
  t.equal(checked, 400);
});

t.test('group commit flushes the images a record was committed with, even if the caller reuses its effects objects', async (t) => {
  const region = newRegion(SMALL, 0, true);
  const store = RecoveryStore.format(region, SMALL);
  const { clientId } = store.register();
  const image = { offset: 8, bytes: u64(41) };
  const effects = { images: [image] };
  store.batch(() => store.commit(clientId, 1, effects));
  // The caller reuses its objects for the next request (another offset).
  image.offset = 512;
  image.bytes = u64(42);
  store.batch(() => store.commit(clientId, 2, effects)); // flushes record 1's images (advance)
  store.batch(() => store.commit(clientId, 3, { images: [] })); // sets record 1's flag
  t.equal(readRecord(store.layout, 0).state, 'applied');
  const st = region.crashState();
  const [media] = [...crashImages(st, { engine: 'none' })];
  const crashed = PmemRegion.openImage(materialize(st, media!));
  const off = store.layout.recordOffset(0);
  t.equal(crashed.loadU32(off), 1, 'record 1 is flagged applied on media');
  t.equal(crashed.loadU32(store.geometry.appOffset + 8), 41, 'so its image is on media');
});

// Issue 29: the lazy pipeline names its records by slot, notes the lines their images dirtied at
// commit (each line once) and persists a run of consecutive slots' flags in one persist. At each
// step the media (what a crash keeps, engine 'none') must hold every flag of the records two
// batches back and every image of the records one batch back — across log wraps, batches of
// 1..logRecords records, images sharing a line, spanning two, and a line shared by every record (a
// counter), as the digest workload writes them. Seeded: the batch sizes and image offsets vary.
t.test('group commit: each step makes durable every flag and every image line of its records (wraps, shared and spanning lines)', async (t) => {
  const seed = Number(process.env.PMRPC_SEED ?? 29);
  t.comment(`seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/recovery/hot-path.test.ts)`);
  const prng = createPrng(seed);
  const geo = { ...SMALL, logRecords: 16, appBytes: 4096 };
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-hot-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const tracing of [false, true]) {
    // Untraced (the fast paths of flush and persist): a file region, its media read from the file.
    const path = join(dir, `r${tracing ? 't' : ''}.pm`);
    const region = tracing ? newRegion(geo, 0, true) : PmemRegion.create(path, layoutBytes(geo), { entropy: seededEntropy(createPrng(7)) });
    t.teardown(() => region.close({ writeBack: false }));
    const store = RecoveryStore.format(region, geo);
    const { clientId } = store.register();
    const app = store.geometry.appOffset;
    let seq = 0;
    /** Per batch: its records (LSN, slot) and the images they wrote (offset, value). */
    const batches: Array<{ recs: Array<{ lsn: number; index: number }>; images: Array<{ offset: number; value: number }> }> = [];
    const onMedia = (): PmemRegion => {
      if (!tracing) return PmemRegion.openImage(readFileSync(path));
      const st = region.crashState();
      const [media] = [...crashImages(st, { engine: 'none' })];
      return PmemRegion.openImage(materialize(st, media!));
    };
    for (let b = 0; b < 40; b++) {
      const n = prng.int(1, 8); // two batches in the pipeline plus this one stay within 16 slots... mostly: the rest is completeAll's
      const batch: (typeof batches)[number] = { recs: [], images: [] };
      store.batch(() => {
        for (let k = 0; k < n; k++) {
          seq++;
          // A digest-like entry (16 B, 4 to a line, some spanning two lines: offsets of 12 mod 16) and a counter on line 0.
          const at = 64 + ((seq * 16 + (prng.chance(0.25) ? 12 : 0)) % 3900);
          const images = [{ offset: at, bytes: u64(seq * 3) }, { offset: 0, bytes: u64(seq) }];
          const { lsn } = store.commit(clientId, seq, { images });
          batch.recs.push({ lsn, index: (lsn - 1) % 16 });
          batch.images.push({ offset: at, value: seq * 3 }, { offset: 0, value: seq });
        }
      });
      batches.push(batch);
      // The media after this batch's first commit ran the step: checked at the next batch (below), here after completeAll at the end.
      if (b >= 2) {
        const media = onMedia();
        const flagged = batches[b - 2]!;
        const imaged = batches[b - 1]!;
        for (const r of flagged.recs) {
          // A record two batches back is flagged unless a later record took its slot (then that one's LSN, or its own: never less).
          const lo = media.loadU32(store.layout.recordOffset(r.index));
          if (lo < r.lsn) t.fail(`tracing ${tracing}, batch ${b}: record ${r.lsn}'s flag is ${lo} on media`);
        }
        for (const im of [...flagged.images, ...imaged.images]) {
          // An image is on media (or a later record's image overwrote that word: the counter, or a wrapped log position).
          const v = media.loadU32(app + im.offset);
          if (v < im.value && im.offset !== 0) t.fail(`tracing ${tracing}, batch ${b}: image at ${im.offset} is ${v} on media, ${im.value} expected`);
        }
        const counter = media.loadU32(app);
        const last = imaged.images[imaged.images.length - 1]!.value;
        if (counter < last) t.fail(`tracing ${tracing}, batch ${b}: the counter is ${counter} on media, ${last} expected`);
      }
    }
    store.log.completeAll();
    const media = onMedia();
    for (const r of batches.flatMap((x) => x.recs).slice(-16)) t.equal(media.loadU32(store.layout.recordOffset(r.index)), r.lsn, `tracing ${tracing}: record ${r.lsn} flagged after completeAll`);
    t.equal(media.loadU32(app), seq, `tracing ${tracing}: the counter is durable after completeAll`);
  }
});

// Issue 29: commit encodes into a scratch it does not clear (every byte of a record is written,
// padding too): a record after a longer one must be byte for byte encodeRecord's (fresh, zeroed).
t.test('commit encodes into its scratch byte for byte what encodeRecord encodes (after longer records, odd lengths)', async (t) => {
  const region = newRegion(SMALL);
  const store = RecoveryStore.format(region, SMALL);
  const { clientId } = store.register();
  const prng = createPrng(29);
  for (let seq = 1; seq <= 40; seq++) {
    const bytes = (n: number): Uint8Array => Uint8Array.from({ length: n }, () => prng.int(1, 255));
    const images = Array.from({ length: prng.int(0, 3) }, () => ({ offset: prng.int(0, 900), bytes: bytes(prng.int(0, 21)) }));
    const effects = prng.chance(0.5) ? { images, result: bytes(prng.int(0, 13)) } : { images };
    const { lsn } = store.commit(clientId, seq, effects);
    const want = encodeRecord(lsn, clientId, seq, effects);
    const off = store.layout.recordOffset((lsn - 1) % SMALL.logRecords!);
    const got = region.load(off + 8, want.length - 8);
    if (!Buffer.from(got).equals(Buffer.from(want.subarray(8)))) t.fail(`record ${lsn} differs from encodeRecord's`);
  }
  t.pass('40 records of random sizes, as encodeRecord');
});
