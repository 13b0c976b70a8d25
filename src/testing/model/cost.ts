/**
 * The cost model of modelled time (DESIGN §7, §9; issue 14): named parameters, units in their
 * names, with defaults taken once from the published measurements in docs/references.md §7 (the source of
 * each is in `COST_SOURCES` and in docs/model.md). Nothing here is fitted to a reproduction row.
 *
 * The deterministic scheduler (src/testing/crash/world.ts with a cost model) charges every event
 * to a resource of its node — the NIC's processing pipeline, the server CPU (and a worker core),
 * the PM media, the node's ingress and egress links — so contention queues and pipelining shows:
 * a resource serves one event at a time, different resources work in parallel.
 */
import type { ClientMessage, ServerMessage, WorkRequest } from '../../../flush/index.js';

export interface CostModel {
  /** Profile name (`cx4-optane`, `cx3-optane`, `software-nic`, or a caller's). */
  name: string;
  /**
   * Round trip of a small one-sided READ, end to end (requester post → completion): the fabric,
   * both NICs and one PCIe DMA read at the responder. The fabric's one-way share is derived:
   * (wireRttUs − nicVerbUs − pcieDmaReadNs) / 2, so a small READ costs exactly wireRttUs.
   */
  wireRttUs: number;
  /** Link bandwidth (serialisation of a message on its link; a node's ingress and egress are resources). */
  wireGbps: number;
  /** Header bytes on the wire per message (transport headers, one per doorbell). */
  wireHeaderBytes: number;
  /** NIC pipeline occupancy per work request (1 / its message rate). */
  nicVerbUs: number;
  /** NIC pipeline occupancy per request message: one doorbell + WQE fetch (what doorbell batching amortises). */
  nicDoorbellUs: number;
  /** Work requests one doorbell carries before another is rung (a longer chain pays nicDoorbellUs again). */
  doorbellBatch: number;
  /** NIC atomics (CAS, FAA, ATOMIC WRITE, PRISM CAS) on one address are serialised: this long each. */
  nicAtomicSameAddrUs: number;
  /** NIC atomics on different addresses: extra pipeline occupancy per atomic. */
  nicAtomicUs: number;
  /** PCIe DMA read of 64 B, latency (a READ, each pointer dereference, a FLUSH's read-after-write). */
  pcieDmaReadNs: number;
  /** PCIe DMA read, extra latency per byte from 64 B to 2 KiB (one DMA; past that a READ streams at the link's rate). */
  pcieDmaNsPerByte: number;
  /** PCIe posted write visible to a later read (write-then-read minus read). */
  pcieDmaWriteNs: number;
  /** PM media read of one line, random (an indirect target, a poll of PM). */
  pmReadNs: number;
  /**
   * DRAM read of one line, random: the host-memory access inside pcieDmaReadNs. A hardware NIC's
   * DMA read of PM (data, a pointer, an atomic's target) pays the media's extra over it:
   * pmReadNs − dramReadNs (PM is the node's memory; DDIO never allocates on a DMA read).
   */
  dramReadNs: number;
  /** Persist (store + clwb + sfence) fixed part, per drain. */
  pmPersistNs: number;
  /** Persist, per 256 B XPLine written back (the media's write bandwidth). */
  pmPersistNsPer256B: number;
  /** Server CPU per pass (one poll of the CQ / ring and its bookkeeping). */
  cpuPassUs: number;
  /** Server CPU per request handler (the application's work). */
  cpuHandlerUs: number;
  /**
   * The NIC is software on a dedicated server core (PRISM's prototype): every work request also
   * occupies that core for this long (0: a hardware NIC), and each request message pays the
   * hardware NIC's hand-off to that core and back (a PCIe write and read). Memory accesses of the
   * software NIC are loads (pmReadNs), so PRISM's dereferences cost a PM read instead of a PCIe
   * round trip.
   */
  softwareNicUs: number;
}

/** Where each default comes from (docs/references.md §7, "Cost-model calibration"). */
export const COST_SOURCES: Readonly<Record<Exclude<keyof CostModel, 'name'>, string>> = Object.freeze({
  wireRttUs: 'small-message RDMA round trip 2 µs (1.3–2.6), 100 Gb NICs — Kalia ATC\'16; pmem-bench',
  wireGbps: 'ConnectX-4 100 Gb (perftest in a CX-4 thesis); ConnectX-3 56 Gb FDR',
  wireHeaderBytes: 'RoCE/IB transport headers (BTH + RETH + ICRC ≈ 64 B); PCIe TLP overhead 24/20 B — pcie-bench model',
  nicVerbUs: 'inbound WRITE 122 Mops, READ 88 Mops — Kalia ATC\'16 (1 / 100 Mops ≈ 0.01 µs)',
  nicDoorbellUs: 'doorbell batching: +27% ops — Kalia ATC\'16 (a doorbell ≈ 0.27 × a verb\'s time at the 37 Mops doorbell-bound rate)',
  doorbellBatch: 'Kalia ATC\'16 batches up to 16 WQEs per doorbell',
  nicAtomicSameAddrUs: 'NIC atomics on one address 2.2–2.7 Mops — Kalia ATC\'16 (1 / 2.5 Mops = 0.4 µs)',
  nicAtomicUs: 'NIC atomics on spread addresses 52 Mops (Connect-IB) — Kalia ATC\'16; 2.7 Mops on CX-3 (serialises all)',
  pcieDmaReadNs: 'PCIe DMA read 64 B 546 ns — pcie-bench (NFP6000, Broadwell)',
  pcieDmaNsPerByte: 'PCIe DMA read 533 ns (4 B) – 1,133 ns (2 KiB) — pcie-bench: (1133−533)/2044 B ≈ 0.29 ns/B',
  pcieDmaWriteNs: 'write-then-read 64 B 773 ns vs read 546 ns — pcie-bench: 227 ns',
  pmReadNs: 'Optane random read 305 ns — FAST\'20 OptaneStudy',
  dramReadNs: 'DRAM random read 102 ns (DDR4-2666) — FAST\'20 OptaneStudy',
  pmPersistNs: 'store + clwb + sfence 64 B 62 ns; persist 256 B 192 ns — FAST\'20 OptaneStudy: 192 − 111 = 81 ns',
  pmPersistNsPer256B: 'persist 4 KiB 1,774 ns = 16 × 111 ns; one DIMM 2.2 GB/s at 256 B (256 B / 2.2 GB/s = 116 ns) — FAST\'20 OptaneStudy',
  cpuPassUs: 'KV handler CPU per request ~100 ns (80–250) — HERD, Kalia ATC\'16 (the poll and bookkeeping of one pass)',
  cpuHandlerUs: 'KV handler CPU per request ~100 ns (80–250) — HERD, Kalia ATC\'16',
  softwareNicUs: 'software RDMA on a dedicated core: 5 M ops/s per core — Snap SOSP\'19 (0.2 µs per op); hardware NICs: 0',
});

/**
 * cx4-optane (default): ConnectX-4 100 Gb, Optane DCPMM. DDIO is not a cost: it is the NIC
 * configuration (the World's NicConfig), and decides whether NIC writes are charged to the PM media
 * (off) or left to the CPU's write-backs (on).
 */
export const CX4_OPTANE: Readonly<CostModel> = Object.freeze({
  name: 'cx4-optane',
  wireRttUs: 2.0,
  wireGbps: 100,
  wireHeaderBytes: 64,
  nicVerbUs: 0.01,
  nicDoorbellUs: 0.027,
  doorbellBatch: 16,
  nicAtomicSameAddrUs: 0.4,
  nicAtomicUs: 0.019,
  pcieDmaReadNs: 546,
  pcieDmaNsPerByte: 0.29,
  pcieDmaWriteNs: 227,
  pmReadNs: 305,
  dramReadNs: 102,
  pmPersistNs: 81,
  pmPersistNsPer256B: 111,
  cpuPassUs: 0.1,
  cpuHandlerUs: 0.1,
  softwareNicUs: 0,
});

/** cx3-optane: ConnectX-3 56 Gb FDR (the SC'21 artifact's class of NIC): slower link, every atomic serialised. */
export const CX3_OPTANE: Readonly<CostModel> = Object.freeze({
  ...CX4_OPTANE,
  name: 'cx3-optane',
  wireRttUs: 2.6,
  wireGbps: 56,
  nicAtomicSameAddrUs: 0.37,
  nicAtomicUs: 0.37,
});

/** software-nic: the NIC on a dedicated server core (PRISM's prototype; Snap-like 5 M ops/s per core). */
export const SOFTWARE_NIC: Readonly<CostModel> = Object.freeze({
  ...CX4_OPTANE,
  name: 'software-nic',
  softwareNicUs: 0.2,
});

export const COST_PROFILES: Readonly<Record<string, Readonly<CostModel>>> = Object.freeze({
  'cx4-optane': CX4_OPTANE,
  'cx3-optane': CX3_OPTANE,
  'software-nic': SOFTWARE_NIC,
});
export const COST_PROFILE_NAMES: readonly string[] = Object.freeze(Object.keys(COST_PROFILES));
export const DEFAULT_COST_PROFILE = 'cx4-optane';

/** The profile called `name`; a TypeError naming the profiles otherwise. */
export function costProfile(name: string): Readonly<CostModel> {
  const p = Object.hasOwn(COST_PROFILES, name) ? COST_PROFILES[name] : undefined;
  if (p === undefined) throw new TypeError(`model must be one of ${COST_PROFILE_NAMES.join(', ')}, got ${String(name)}`);
  return p;
}

/** A profile with some parameters replaced (each checked: a finite number ≥ 0, doorbellBatch an integer ≥ 1). */
export function withCosts(base: Readonly<CostModel>, changes: Partial<CostModel>): Readonly<CostModel> {
  const out = { ...base, ...changes };
  for (const [k, v] of Object.entries(out)) {
    if (k === 'name') continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new RangeError(`cost ${k} must be a finite number >= 0, got ${String(v)}`);
  }
  if (!Number.isInteger(out.doorbellBatch) || out.doorbellBatch < 1) throw new RangeError(`cost doorbellBatch must be an integer >= 1, got ${String(out.doorbellBatch)}`);
  return Object.freeze(out);
}

// ------------------------------------------------------------------------ derived costs (ns)

const us = (x: number): number => x * 1000;

/** The fabric's one-way time, ns, without serialisation (see wireRttUs). */
export function wireOneWayNs(m: CostModel): number {
  return Math.max(0, (us(m.wireRttUs) - us(m.nicVerbUs) - m.pcieDmaReadNs) / 2);
}

/** Serialisation of `bytes` (+ header) on a link, ns. */
export function wireSerialNs(m: CostModel, bytes: number): number {
  return ((bytes + m.wireHeaderBytes) * 8) / m.wireGbps;
}

/** Payload bytes of a request message on the wire. */
export function requestBytes(msg: ClientMessage): number {
  let n = 0;
  for (const wr of msg.wrs ?? []) {
    n += 32; // the WQE's addressing (rkey, addr, length, flags)
    const d = (wr as { data?: Uint8Array }).data;
    if (d instanceof Uint8Array) n += d.length;
  }
  return n;
}

/** Payload bytes of a response or notification on the wire. */
export function responseBytes(msg: ServerMessage): number {
  if (msg.type === 'notify') return msg.data.length;
  let n = 0;
  for (const c of msg.completions) n += 8 + (c.data?.length ?? 0);
  return n;
}

/** A NIC work request's cost: pipeline occupancy, extra latency before its completion, and whether it is an atomic (and on which address). */
export interface WrCost {
  /** Occupancy of the NIC pipeline (or of the software NIC's core). */
  occupancyNs: number;
  /** Latency after the occupancy before the request's effect / output is done (PCIe round trips). */
  latencyNs: number;
  /** Bytes this request sends to PM media (DDIO off) or the LLC (DDIO on). */
  writeBytes: number;
  /** An atomic's target address (serialised per address), else undefined. */
  atomicAddr: number | undefined;
}

const lenOf = (wr: WorkRequest): number => {
  const d = (wr as { data?: Uint8Array }).data;
  if (d instanceof Uint8Array) return d.length;
  const l = (wr as { len?: number }).len;
  return typeof l === 'number' ? l : 0;
};

/** A location in the connection's scratch buffer: NIC memory, reached without PCIe. */
const inScratch = (loc: unknown): boolean => typeof loc === 'object' && loc !== null && 'scratch' in loc;

const addrOf = (loc: unknown): number | undefined => {
  const a = (loc as { addr?: unknown } | undefined)?.addr;
  return typeof a === 'number' ? a : undefined;
};

/**
 * The cost of one work request (DESIGN §2.2 verbs) under `m`. Reads pay a PCIe DMA read (64 B +
 * per byte); each dereference (indirect, bounded, dataIndirect, ALLOCATE's free list) one more; a
 * FLUSH a read-after-write round trip (it waits for the QP's posted writes, as rxe and APM do);
 * writes occupy the DMA engine per byte and, without DDIO, the PM media (charged by the caller).
 * The scratch buffer is the NIC's own memory: a READ of it, an operand or a pointer taken from it
 * (a receipt, a redirected output) costs no PCIe transaction and no media — what the NIC does with
 * it happens inside its pipeline (the request's occupancy).
 */
export function wrCost(m: CostModel, wr: WorkRequest): WrCost {
  const verb = us(m.nicVerbUs) + us(m.softwareNicUs);
  const len = lenOf(wr);
  // pcie-bench's slope holds for one DMA up to 2 KiB; a larger READ is split into many DMAs in
  // flight, so past 2 KiB it streams at the link's rate (what a NIC reaches on large READs).
  const lineNsPerByte = 8 / m.wireGbps;
  const readNs = (bytes: number): number => m.pcieDmaReadNs + (Math.min(bytes, 2048) - Math.min(bytes, 64)) * m.pcieDmaNsPerByte + Math.max(0, bytes - 2048) * lineNsPerByte;
  // Inbound payloads stream through the NIC at line rate (the node's ingress link already
  // serialises them): the pipeline's per-byte occupancy is the link's.
  const streamNs = (bytes: number): number => bytes * lineNsPerByte;
  // A software NIC (a dedicated server core) reads host memory with loads: a dereference or a READ
  // costs a PM read there, not a PCIe round trip.
  const hw = m.softwareNicUs === 0;
  const deref = (n: number): number => n * (hw ? m.pcieDmaReadNs : m.pmReadNs);
  // A hardware NIC's DMA read of PM is served by the media (DDIO does not allocate on a DMA read):
  // each dependent PM access pays the media's extra over the DRAM access pcieDmaReadNs includes.
  // The scratch buffer is NIC memory (no media). A software NIC's loads already pay pmReadNs.
  const media = (accesses: number): number => (hw ? accesses * Math.max(0, m.pmReadNs - m.dramReadNs) : 0);
  const pm = (loc: unknown): number => (addrOf(loc) !== undefined ? 1 : 0);
  switch (wr.op) {
    case 'write':
    case 'writeImm': {
      // The pointer at `to` (indirect) and the payload at `from` are DMA reads unless in scratch.
      const ptr = (wr.indirect === true || wr.bounded === true) && !inScratch(wr.to) ? 1 : 0;
      const src = wr.from !== undefined && !inScratch(wr.from) ? 1 : 0;
      return { occupancyNs: verb + streamNs(len), latencyNs: deref(ptr + src) + media(ptr * pm(wr.to) + src * pm(wr.from)), writeBytes: len, atomicAddr: undefined };
    }
    case 'send':
      return { occupancyNs: verb + streamNs(len), latencyNs: 0, writeBytes: len, atomicAddr: undefined };
    case 'read': {
      // Direct: the data at `from`. Indirect / bounded: the pointer at `from`, then the data it names (PM).
      const derefs = wr.indirect === true || wr.bounded === true ? 1 : 0;
      const local = inScratch(wr.from);
      // A direct READ of scratch: the NIC answers from its own memory (no DMA).
      if (local && derefs === 0) return { occupancyNs: verb, latencyNs: 0, writeBytes: 0, atomicAddr: undefined };
      // Through a pointer held in scratch: only the data's DMA read (of PM).
      if (local) return { occupancyNs: verb, latencyNs: (hw ? readNs(wr.len) : m.pmReadNs + wr.len * lineNsPerByte) + media(1), writeBytes: 0, atomicAddr: undefined };
      return { occupancyNs: verb, latencyNs: (hw ? readNs(wr.len) : m.pmReadNs + wr.len * lineNsPerByte) + deref(derefs) + media(pm(wr.from) + derefs), writeBytes: 0, atomicAddr: undefined };
    }
    case 'flush':
      // The read-after-write of rxe / APM: a DMA read that waits for the QP's posted writes to be
      // placed (their pcieDmaWriteNs and, without DDIO, the media) — the scheduler adds that wait.
      // A software NIC's core persists the range itself (clwb per line + sfence, as rxe does): a
      // fence, not a PCIe round trip; dirty lines' write-back is charged to the media either way.
      return { occupancyNs: verb, latencyNs: hw ? m.pcieDmaReadNs : m.pmPersistNs, writeBytes: 0, atomicAddr: undefined };
    case 'cas':
    case 'faa':
      // Read-modify-write of the target: its read is a PM access.
      return { occupancyNs: verb + us(m.nicAtomicUs), latencyNs: m.pcieDmaReadNs + media(pm(wr.at)), writeBytes: 8, atomicAddr: addrOf(wr.at) };
    case 'atomicWrite':
      return { occupancyNs: verb + us(m.nicAtomicUs), latencyNs: m.pcieDmaReadNs, writeBytes: 8, atomicAddr: addrOf(wr.at) };
    case 'prismCas': {
      // The target's read (through the pointer at `at` when indirect), and the operand's when
      // dataIndirect — each a DMA read unless it is in scratch (a receipt's operand: NIC memory).
      const ptr = wr.indirect === true && !inScratch(wr.at) ? 1 : 0;
      const src = wr.from !== undefined && !inScratch(wr.from) ? 1 : 0;
      const derefs = ptr + src;
      const reads = (wr.indirect === true ? pm(wr.at) + 1 : pm(wr.at)) + src * pm(wr.from);
      return { occupancyNs: verb + us(m.nicAtomicUs), latencyNs: m.pcieDmaReadNs + deref(derefs) + media(reads), writeBytes: wr.len, atomicAddr: wr.indirect === true ? undefined : addrOf(wr.at) };
    }
    case 'allocate':
      // The free-list pop is a NIC-local operation; the data is a DMA write.
      const src = wr.from !== undefined && !inScratch(wr.from) ? 1 : 0;
      return { occupancyNs: verb + streamNs(len), latencyNs: deref(src) + media(src * pm(wr.from)), writeBytes: len, atomicAddr: undefined };
  }
}

/** PM media time for writing back `bytes` (a persist of that many bytes, without its fixed part). */
export function pmWriteNs(m: CostModel, bytes: number): number {
  return bytes <= 0 ? 0 : Math.ceil(bytes / 256) * m.pmPersistNsPer256B;
}

/** Extra latency of a request message on a software NIC: the hardware NIC hands it to the core and the answer back. */
export function softwareHandoffNs(m: CostModel): number {
  return softwareHandoffInNs(m) + softwareHandoffOutNs(m);
}

/** Software NIC: the hardware NIC writes the request message into the core's memory (a posted PCIe write) before any of its work requests starts. */
export function softwareHandoffInNs(m: CostModel): number {
  return m.softwareNicUs > 0 ? m.pcieDmaWriteNs : 0;
}

/** Software NIC: the hardware NIC reads the response back (a PCIe read) after the message's last work request is done. */
export function softwareHandoffOutNs(m: CostModel): number {
  return m.softwareNicUs > 0 ? m.pcieDmaReadNs : 0;
}
