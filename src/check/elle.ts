/**
 * An Elle-style checker of transactional histories over a list-append workload (Kingsbury &
 * Alvaro, "Elle: Inferring Isolation Anomalies from Experimental Observations", VLDB 2020), with
 * Adya's anomaly classes (G0, G1a, G1b, G1c, G-single, G2). Written by hand: no maintained
 * JavaScript Elle exists (jepsen-io/elle is Clojure); this one follows the paper's inference, not
 * its code.
 *
 * The workload: every write appends a value, unique per key, to a list; every read returns the
 * whole list. A committed read is then a prefix of the key's version order, so the checker infers
 * the order from the reads alone and never trusts the store's timestamps:
 *   - version order of a key = its longest committed read (its first occurrences, when a value
 *     repeats); every other committed read must be a prefix of it, or the key's reads are
 *     `incompatible-order` (the longest read still orders the key, as in Elle; a read that is not
 *     its prefix gives only a wr edge);
 *   - ww: the writer of each element → the writer of the next element;
 *   - wr: the writer of the last element a transaction read (before its own appends) → the reader;
 *   - rw: a reader → the writer of the element that follows what it read;
 *   - a committed append that no read shows comes after every element of the version order
 *     (the order is a prefix of the whole one): the last known writer →ww it, and every read of
 *     the whole known order →rw it;
 *   - rt (option `realtime`, strict serializability): T1 →rt T2 when T1 returned before T2 was
 *     invoked (transitively reduced, as Elle does).
 * A cycle of these edges is an anomaly, classified by its edges: only ww → G0; ww and wr → G1c;
 * exactly one rw → G-single; more → G2; a cycle that needs an rt edge gets the suffix
 * `-realtime`. Non-cycle anomalies: G1a (a committed read saw an aborted append), G1b (it saw an
 * append that was not its writer's last to that key), internal (a transaction's read disagrees
 * with its own earlier reads and appends), future-read (a read shows an append its own
 * transaction makes only later; no inference from that read), duplicate-elements, garbage-read
 * (a value nobody appended). A value appended twice to a key breaks the workload's contract: it
 * is reported (`duplicate-appends`), nothing is inferred from that key, and without another
 * anomaly the result is 'unknown'. So is a history in which nothing committed.
 *
 * 'info' transactions (indeterminate: a crash or timeout cut them) may or may not have
 * committed: their reads are ignored; one whose append some committed read shows did commit and
 * takes part in the graph; one none of whose appends is seen is treated as never having happened
 * (which is always a possible outcome). For real-time order an info transaction never returns
 * (it may commit after its client gave up). 'fail' transactions are known aborted: not in the
 * graph, and any read of their appends is G1a.
 *
 * Sound (every reported anomaly is real, given the workload's uniqueness assumption) and, like
 * Elle, incomplete. Bounded: past `maxEdges` the result is 'unknown' (callers count it as a
 * failure); cycle searches past `maxSearchSteps` stop refining the classification but every
 * strongly connected component still yields one cycle as evidence.
 */
import { bool, positiveInt, resolveOptions } from '../../pmem/index.js';
import { AnomalyList, isFiniteNumber as isNum, show, showList, type CheckerResult, type TxnId, type TxnType } from './report.js';

export type { CheckerResult, TxnId, TxnType } from './report.js';

/** A key: a string or a number, compared with === (1 and '1' are two keys). */
export type KeyName = string | number;

/** A read of a key (the whole list; null = not known) or an append of one value to it. */
export type ListAppendMop = { f: 'r'; key: KeyName; value: readonly number[] | null } | { f: 'append'; key: KeyName; value: number };

export interface ListAppendTxn {
  /** Unique per history. */
  id: TxnId;
  process: number;
  /** ok = committed; fail = known aborted; info = indeterminate (may or may not have committed). */
  type: TxnType;
  mops: readonly ListAppendMop[];
  /** Invocation time (any monotonic unit); needed by the `realtime` option for ok and info transactions. */
  call?: number;
  /** Completion time; needed by `realtime` for ok transactions; ignored for info ones (they may take effect later). */
  ret?: number;
}

export type EdgeKind = 'ww' | 'wr' | 'rw' | 'rt';

/** One edge of a cycle: `from` must precede `to` because of `edge` (on `key`, except rt). */
export interface CycleStep {
  from: TxnId;
  to: TxnId;
  edge: EdgeKind;
  key?: KeyName;
}

export type CycleKind = 'G0' | 'G1c' | 'G-single' | 'G2';
export type ElleAnomalyKind =
  | CycleKind
  | `${CycleKind}-realtime`
  | 'G1a'
  | 'G1b'
  | 'incompatible-order'
  | 'internal'
  | 'future-read'
  | 'duplicate-elements'
  | 'duplicate-appends'
  | 'garbage-read';

export interface ElleAnomaly {
  kind: ElleAnomalyKind;
  detail: string;
  /** Cycle anomalies: the cycle, each step's `to` the next step's `from`, the last back to the first. */
  cycle?: CycleStep[];
  key?: KeyName;
  txns?: TxnId[];
}

export interface ListAppendStats {
  transactions: number;
  ok: number;
  info: number;
  fail: number;
  /** Graph nodes: ok transactions and info transactions seen to have committed. */
  committed: number;
  keys: number;
  reads: number;
  edges: Record<EdgeKind, number>;
  /** Strongly connected components with a cycle (each one an anomaly). */
  cyclicComponents: number;
  searchSteps: number;
  /** The search bound stopped the refinement of some cycle's class. */
  searchTruncated: boolean;
  /** Anomalies found per kind (the list keeps at most `maxReportsPerKind` of each). */
  counts: Partial<Record<ElleAnomalyKind, number>>;
}

export type ListAppendResult = CheckerResult<ElleAnomaly, ListAppendStats>;

export interface ListAppendOptions {
  /** Add real-time edges (T1 returned before T2 was invoked): checks strict serializability. */
  realtime: boolean;
  /** Bound on dependency edges; past it the result is 'unknown' (unless an anomaly was already found). */
  maxEdges: number;
  /** Bound on the edges the cycle searches visit (refinement of cycle classes). */
  maxSearchSteps: number;
  /** Anomalies listed per kind (all are counted in stats.counts). */
  maxReportsPerKind: number;
}

export const LIST_APPEND_DEFAULTS: Readonly<ListAppendOptions> = Object.freeze({
  realtime: false,
  maxEdges: 5_000_000,
  maxSearchSteps: 20_000_000,
  maxReportsPerKind: 8,
});

const WW = 1;
const WR = 2;
const RW = 4;
const RT = 8;
const DEP = WW | WR | RW;
const ALL = DEP | RT;
/** Kinds in order of preference when an edge has several (the weakest first gives the most specific class). */
const KINDS: ReadonlyArray<[number, EdgeKind]> = [
  [WW, 'ww'],
  [WR, 'wr'],
  [RW, 'rw'],
  [RT, 'rt'],
];

interface EdgeInfo {
  mask: number;
  ww?: KeyName;
  wr?: KeyName;
  rw?: KeyName;
}

interface Writer {
  t: number;
  /** The writer's last append to this key. */
  last: boolean;
}

interface Read {
  t: number;
  key: KeyName;
  value: readonly number[];
  /** How many elements it observed: its value without the reader's own trailing appends. */
  observed: number;
  /** Not a prefix of the key's version order (incompatible-order): gives only a wr edge. */
  stray?: boolean;
}


function validate(history: readonly ListAppendTxn[], realtime: boolean): void {
  if (!Array.isArray(history)) throw new TypeError(`history must be an array, got ${String(history)}`);
  const ids = new Map<TxnId, number>();
  history.forEach((t, i) => {
    const at = `history[${i}]`;
    if (t === null || typeof t !== 'object') throw new TypeError(`${at} must be a transaction object, got ${String(t)}`);
    if (typeof t.id !== 'string' && !isNum(t.id)) throw new TypeError(`${at}.id must be a number or a string, got ${String(t.id)}`);
    const prev = ids.get(t.id);
    if (prev !== undefined) throw new RangeError(`${at}.id ${show(t.id)} repeats history[${prev}].id: transaction ids must be unique`);
    ids.set(t.id, i);
    if (!isNum(t.process)) throw new TypeError(`${at}.process must be a number, got ${String(t.process)}`);
    if (t.type !== 'ok' && t.type !== 'fail' && t.type !== 'info') throw new TypeError(`${at}.type must be 'ok', 'fail' or 'info', got ${String(t.type)}`);
    if (!Array.isArray(t.mops)) throw new TypeError(`${at}.mops must be an array, got ${String(t.mops)}`);
    (t.mops as readonly ListAppendMop[]).forEach((m, j) => {
      const mat = `${at}.mops[${j}]`;
      if (m === null || typeof m !== 'object') throw new TypeError(`${mat} must be a micro-operation object, got ${String(m)}`);
      if (typeof m.key !== 'string' && !isNum(m.key)) throw new TypeError(`${mat}.key must be a string or a number, got ${String(m.key)}`);
      if (m.f === 'append') {
        if (!isNum(m.value)) throw new TypeError(`${mat}.value must be a finite number (the appended value), got ${String(m.value)}`);
      } else if (m.f === 'r') {
        if (m.value !== null && !(Array.isArray(m.value) && m.value.every(isNum))) throw new TypeError(`${mat}.value must be an array of numbers or null, got ${String(m.value)}`);
      } else {
        throw new TypeError(`${mat}.f must be 'r' or 'append', got ${String((m as { f: unknown }).f)}`);
      }
    });
    if (t.call !== undefined && !isNum(t.call)) throw new TypeError(`${at}.call must be a finite number, got ${String(t.call)}`);
    if (t.ret !== undefined && (!isNum(t.ret) || (t.call !== undefined && t.ret < t.call))) throw new RangeError(`${at}.ret must be a finite number >= call, got ${String(t.ret)}`);
    if (realtime && t.type !== 'fail') {
      if (t.call === undefined) throw new TypeError(`${at}.call must be a finite number when options.realtime is set, got undefined`);
      if (t.type === 'ok' && t.ret === undefined) throw new TypeError(`${at}.ret must be a finite number for an ok transaction when options.realtime is set, got undefined`);
    }
  });
}

/**
 * Checks a list-append history for Adya's anomalies (serializability; with `realtime`, strict
 * serializability). See the module comment for the inference and how 'info' is treated.
 */
export function checkListAppend(history: readonly ListAppendTxn[], options: Partial<ListAppendOptions> = {}): ListAppendResult {
  const o = resolveOptions(LIST_APPEND_DEFAULTS, options, { realtime: bool, maxEdges: positiveInt, maxSearchSteps: positiveInt, maxReportsPerKind: positiveInt });
  validate(history, o.realtime);
  const n = history.length;
  const found = new AnomalyList<ElleAnomaly, ElleAnomalyKind>(o.maxReportsPerKind);
  const anomalies = found.list;
  const counts = found.counts;
  const report = (a: ElleAnomaly): void => found.add(a);
  const id = (t: number): TxnId => history[t]!.id;
  const stats: ListAppendStats = {
    transactions: n,
    ok: 0,
    info: 0,
    fail: 0,
    committed: 0,
    keys: 0,
    reads: 0,
    edges: { ww: 0, wr: 0, rw: 0, rt: 0 },
    cyclicComponents: 0,
    searchSteps: 0,
    searchTruncated: false,
    counts,
  };

  // Writers of every (key, value); appended values must be unique per key (the workload's contract).
  const writers = new Map<KeyName, Map<number, Writer>>();
  const appendsOf = new Map<KeyName, number[]>(); // key -> values in history order
  // Keys with a value appended twice: a value no longer names one writer, so nothing is inferred
  // from them (Elle refuses such a history: its valid? is :unknown, type :duplicate-appends).
  const tainted = new Set<KeyName>();
  for (let t = 0; t < n; t++) {
    const tx = history[t]!;
    stats[tx.type]++;
    const lastIdx = new Map<KeyName, number>();
    tx.mops.forEach((m, j) => {
      if (m.f === 'append') lastIdx.set(m.key, j);
    });
    tx.mops.forEach((m, j) => {
      if (m.f !== 'append') return;
      let w = writers.get(m.key);
      if (!w) {
        writers.set(m.key, (w = new Map()));
        appendsOf.set(m.key, []);
      }
      const prev = w.get(m.value);
      if (prev) {
        tainted.add(m.key);
        const by = prev.t === t ? 'earlier in the same transaction' : `by transaction ${show(id(prev.t))}`;
        report({ kind: 'duplicate-appends', key: m.key, txns: prev.t === t ? [id(t)] : [id(prev.t), id(t)], detail: `transaction ${show(id(t))} appends ${m.value} to '${m.key}', already appended ${by}: appended values must be unique per key, so nothing is inferred from '${m.key}'` });
        return;
      }
      w.set(m.value, { t, last: lastIdx.get(m.key) === j });
      appendsOf.get(m.key)!.push(m.value);
    });
  }

  // Internal consistency of each committed transaction; its reads.
  const readsByKey = new Map<KeyName, Read[]>();
  const committed = new Uint8Array(n);
  for (let t = 0; t < n; t++) {
    const tx = history[t]!;
    if (tx.type !== 'ok') continue;
    committed[t] = 1;
    // What the transaction knows of each key: the list it read last (or nothing) and its appends since.
    const own = new Map<KeyName, { base: readonly number[] | undefined; extra: number[] }>();
    // Future reads: a read that shows a value the transaction itself appends only later.
    const future = futureRead(tx.mops);
    if (future) {
      const { mop, value } = future;
      report({ kind: 'future-read', key: mop.key, txns: [tx.id], detail: `transaction ${show(tx.id)} read '${mop.key}' = ${showList(mop.value!)}, including ${value}, which it appends only later` });
    }
    let internal = false;
    for (const m of tx.mops) {
      if (m.f === 'append') {
        const s = own.get(m.key);
        if (s) s.extra.push(m.value);
        else own.set(m.key, { base: undefined, extra: [m.value] });
        continue;
      }
      if (m.value === null) continue;
      const v = m.value;
      const s = own.get(m.key);
      if (s && !internal && !consistent(s.base, s.extra, v)) {
        internal = true; // one per transaction, its first (as Elle counts them)
        const implied = s.base ? showList([...s.base, ...s.extra]) : `a list ending in ${showList(s.extra)}`;
        report({ kind: 'internal', key: m.key, txns: [tx.id], detail: `transaction ${show(tx.id)} read '${m.key}' = ${showList(v)}, but its own earlier reads and appends imply ${implied}` });
      }
      own.set(m.key, { base: v, extra: [] });
      if (future?.mop === m || tainted.has(m.key)) continue; // not a state of the key: no inference from it
      // A value shown twice is reported; the read's order of first occurrences still counts (as in Elle).
      const distinct = [...new Set(v)];
      if (distinct.length < v.length) {
        const dup = v.find((x, i) => v.indexOf(x) !== i)!;
        report({ kind: 'duplicate-elements', key: m.key, txns: [tx.id], detail: `transaction ${show(tx.id)} read '${m.key}' = ${showList(v)}: ${dup} appears more than once` });
      }
      const value = distinct.length < v.length ? distinct : v;
      const w = writers.get(m.key);
      let observed = value.length;
      while (observed > 0 && w?.get(value[observed - 1]!)?.t === t) observed--;
      let l = readsByKey.get(m.key);
      if (!l) readsByKey.set(m.key, (l = []));
      l.push({ t, key: m.key, value, observed });
    }
  }

  // Per key: the version order (the longest read; the others must be its prefixes), then each
  // element's writer once: garbage, info transactions that committed; aborted reads (G1a) per read.
  const reads: Read[] = [];
  const keys = new Set<KeyName>([...writers.keys(), ...readsByKey.keys()]);
  stats.keys = keys.size;
  const orders = new Map<KeyName, readonly number[]>();
  for (const key of keys) {
    if (tainted.has(key)) continue;
    const rs = (readsByKey.get(key) ?? []).slice().sort((a, b) => b.value.length - a.value.length);
    const longest = rs.shift();
    if (longest === undefined) {
      orders.set(key, []);
      continue;
    }
    const order = longest.value;
    const good: Read[] = [longest];
    let bad: Read | undefined;
    for (const r of rs) {
      if (!isPrefix(r.value, order)) {
        bad ??= r;
        r.stray = true;
      }
      good.push(r);
    }
    reads.push(...good);
    stats.reads += good.length;
    // Even when reads disagree, the longest one orders the key (as Elle's version order does).
    orders.set(key, order);
    if (bad) {
      report({
        kind: 'incompatible-order',
        key,
        txns: [longest.t, bad.t].map(id),
        detail: `reads of '${key}' are not prefixes of one order: transaction ${show(id(longest.t))} read ${showList(longest.value)}, transaction ${show(id(bad.t))} read ${showList(bad.value)}`,
      });
    }
    // Each element's writer: once per element of the order, or per read when the order is not known.
    const w = writers.get(key);
    let aborted = false;
    for (const r of bad ? good : [longest]) {
      let garbage: number | undefined;
      for (const x of r.value) {
        const wx = w?.get(x);
        if (!wx) garbage ??= x;
        else if (history[wx.t]!.type === 'info') committed[wx.t] = 1; // a committed read saw it: it committed
        else if (history[wx.t]!.type === 'fail') aborted = true;
      }
      if (garbage !== undefined) report({ kind: 'garbage-read', key, txns: [id(r.t)], detail: `transaction ${show(id(r.t))} read '${key}' = ${showList(r.value)}, including ${garbage}, which no transaction appended` });
    }
    // G1a: every committed read of an aborted append (one per read and element, as Elle counts them).
    if (aborted) {
      for (const r of good) {
        for (const x of r.value) {
          const wx = w?.get(x);
          if (!wx || history[wx.t]!.type !== 'fail') continue;
          const wt = history[wx.t]!;
          report({ kind: 'G1a', key, txns: [wt.id, id(r.t)], detail: `transaction ${show(id(r.t))} read '${key}' = ${showList(r.value)}, including ${x} appended by aborted transaction ${show(wt.id)}` });
        }
      }
    }
    // G1b: what a read observed last is an intermediate append of its writer.
    for (const r of good) {
      const last = r.observed > 0 ? w?.get(r.value[r.observed - 1]!) : undefined;
      if (!last || last.last || history[last.t]!.type === 'fail') continue;
      report({
        kind: 'G1b',
        key,
        txns: [id(last.t), id(r.t)],
        detail: `transaction ${show(id(r.t))} read '${key}' = ${showList(r.value)}, observing ${r.value[r.observed - 1]} last, an intermediate append of transaction ${show(id(last.t))} (it appended more to '${key}' later)`,
      });
    }
  }
  for (let t = 0; t < n; t++) if (committed[t]) stats.committed++;

  // The graph.
  const out: Array<Map<number, EdgeInfo> | undefined> = new Array(n);
  let edgeCount = 0;
  let overflow = false;
  const addEdge = (from: number, to: number, bit: number, key?: KeyName): void => {
    if (from === to || !committed[from] || !committed[to] || overflow) return;
    let m = out[from];
    if (!m) out[from] = m = new Map();
    let e = m.get(to);
    if (!e) m.set(to, (e = { mask: 0 }));
    if (e.mask & bit) return;
    if (++edgeCount > o.maxEdges) {
      overflow = true;
      return;
    }
    e.mask |= bit;
    const kind = KINDS.find(([b]) => b === bit)![1];
    stats.edges[kind]++;
    if (kind !== 'rt') e[kind] = key;
  };
  const writerOf = (key: KeyName, x: number): number | undefined => {
    const w = writers.get(key)?.get(x);
    return w && committed[w.t] ? w.t : undefined;
  };

  // ww: consecutive elements of each order, then the unseen committed appends after it.
  const unseenByKey = new Map<KeyName, number[]>(); // committed writers of appends no read shows
  for (const [key, order] of orders) {
    if (!order) continue;
    let prev: number | undefined;
    for (const x of order) {
      const w = writerOf(key, x);
      if (w === undefined) continue;
      if (prev !== undefined) addEdge(prev, w, WW, key);
      prev = w;
    }
    const inOrder = new Set(order);
    const unseen = new Set<number>();
    for (const x of appendsOf.get(key) ?? []) {
      const w = writerOf(key, x);
      if (w !== undefined && !inOrder.has(x)) unseen.add(w);
    }
    unseenByKey.set(key, [...unseen]);
    if (prev !== undefined) for (const w of unseen) addEdge(prev, w, WW, key);
  }
  // wr and rw, from what each read observed (its value without its own trailing appends).
  for (const r of reads) {
    const len = r.observed;
    if (len > 0) {
      const src = writerOf(r.key, r.value[len - 1]!);
      if (src !== undefined) addEdge(src, r.t, WR, r.key);
    }
    const order = orders.get(r.key);
    if (!order || r.stray) continue;
    let next: number | undefined;
    for (let i = len; i < order.length && next === undefined; i++) next = writerOf(r.key, order[i]!);
    if (next !== undefined) addEdge(r.t, next, RW, r.key);
    else if (len === r.value.length) for (const u of unseenByKey.get(r.key) ?? []) addEdge(r.t, u, RW, r.key);
  }
  // rt: transitively reduced real-time order of the committed transactions.
  if (o.realtime) {
    const events: Array<{ time: number; call: boolean; t: number }> = [];
    for (let t = 0; t < n; t++) {
      if (!committed[t]) continue;
      const tx = history[t]!;
      events.push({ time: tx.call!, call: true, t });
      // An info transaction may take effect after its client gave up (a resolver rolls it forward): it never returns.
      if (tx.type === 'ok') events.push({ time: tx.ret!, call: false, t });
    }
    // Calls before returns at equal times: touching transactions are concurrent.
    events.sort((a, b) => a.time - b.time || (a.call === b.call ? a.t - b.t : a.call ? -1 : 1));
    const frontier = new Set<number>();
    const preds = new Map<number, number[]>();
    for (const e of events) {
      if (e.call) {
        const p = [...frontier];
        preds.set(e.t, p);
        for (const f of p) addEdge(f, e.t, RT);
      } else {
        for (const p of preds.get(e.t)!) frontier.delete(p);
        frontier.add(e.t);
      }
    }
  }

  if (overflow) return verdict(anomalies, counts, stats, `more than maxEdges = ${o.maxEdges} dependency edges`);

  // Cycles: Tarjan's SCCs of the dependency graph, then a cycle of each class in each.
  const search = new CycleSearch(out, o.maxSearchSteps);
  const nodes: number[] = [];
  for (let t = 0; t < n; t++) if (committed[t]) nodes.push(t);
  const toSteps = (cycle: Array<{ from: number; to: number; bit: number }>): CycleStep[] =>
    cycle.map(({ from, to, bit }) => {
      const kind = KINDS.find(([b]) => b === bit)![1];
      const key = kind === 'rt' ? undefined : out[from]!.get(to)![kind];
      return key === undefined ? { from: id(from), to: id(to), edge: kind } : { from: id(from), to: id(to), edge: kind, key };
    });
  const reportCycle = (cycle: Array<{ from: number; to: number; bit: number }>): true => {
    const steps = toSteps(cycle);
    const kind = classify(steps);
    report({
      kind,
      cycle: steps,
      txns: steps.map((s) => s.from),
      detail: `${DESCRIBE[kind.replace('-realtime', '') as CycleKind]}${kind.endsWith('-realtime') ? ', with real-time order' : ''}: ${steps.map((s) => `${show(s.from)} -${s.edge}${s.key === undefined ? '' : `(${s.key})`}-> `).join('')}${show(steps[0]!.from)}`,
    });
    return true;
  };
  const depComponents = tarjan(nodes, out, DEP).filter((c) => c.length > 1);
  const inDepCycle = new Uint8Array(n);
  for (const comp of depComponents) {
    stats.cyclicComponents++;
    for (const t of comp) inDepCycle[t] = 1;
    const inComp = new Set(comp);
    let found = false;
    // G0: a cycle of ww edges.
    for (const sub of tarjan(comp, out, WW, inComp)) {
      if (sub.length < 2) continue;
      const c = search.cycleThrough(sub[0]!, WW, new Set(sub));
      if (c) found = reportCycle(c);
    }
    // G1c: a cycle of ww and wr edges with at least one wr.
    for (const sub of tarjan(comp, out, WW | WR, inComp)) {
      if (sub.length < 2) continue;
      const subSet = new Set(sub);
      const wr = search.edgeIn(sub, WR, WW, subSet); // a wr edge that is also ww is in a G0 cycle
      if (!wr) continue;
      const c = search.path(wr.to, wr.from, WW | WR, subSet);
      if (c) found = reportCycle([{ from: wr.from, to: wr.to, bit: WR }, ...c]);
    }
    // G-single: one rw edge closed by ww / wr edges; else G2: rw edges closed by anything.
    let single = false;
    const rwTargets = new Map<number, number[]>(); // target -> sources (rw edges that are not also ww / wr: those are in G0 / G1c cycles)
    for (const a of comp) {
      for (const [b, e] of out[a] ?? []) {
        if (e.mask !== RW && e.mask !== (RW | RT)) continue;
        if (!inComp.has(b)) continue;
        let l = rwTargets.get(b);
        if (!l) rwTargets.set(b, (l = []));
        l.push(a);
      }
    }
    for (const [b, sources] of rwTargets) {
      const back = search.reach(b, WW | WR, inComp);
      if (!back) break; // bound reached
      const a = sources.find((s) => back.has(s));
      if (a === undefined) continue;
      const c = search.pathFromParents(b, a, back);
      single = found = reportCycle([{ from: a, to: b, bit: RW }, ...c]);
      break;
    }
    if (!single && rwTargets.size > 0) {
      const [b, sources] = rwTargets.entries().next().value as [number, number[]];
      const c = search.path(b, sources[0]!, DEP, inComp, true);
      if (c) found = reportCycle([{ from: sources[0]!, to: b, bit: RW }, ...c]);
    }
    if (!found) {
      // Only past the search bound: one cycle as evidence, whatever its class.
      const c = search.cycleThrough(comp[0]!, DEP, inComp, true);
      reportCycle(c!);
    }
  }
  if (o.realtime) {
    for (const comp of tarjan(nodes, out, ALL)) {
      if (comp.length < 2 || comp.some((t) => inDepCycle[t])) continue;
      stats.cyclicComponents++;
      const inComp = new Set(comp);
      const rt = search.edgeIn(comp, RT, DEP, inComp)!;
      const c = search.path(rt.to, rt.from, ALL, inComp, true)!;
      reportCycle([{ from: rt.from, to: rt.to, bit: RT }, ...c]);
    }
  }
  stats.searchSteps = search.steps;
  stats.searchTruncated = search.truncated;
  return verdict(anomalies, counts, stats);
}

/**
 * The verdict: any anomaly of the store refutes the history; without one it is 'unknown' when the
 * check could not decide (`bound`: a bound was exceeded), when the history breaks the workload's
 * contract (duplicate appends), or when nothing committed (nothing to check, as Elle's
 * empty-transaction-graph and the bank / cycle checkers say); else valid.
 */
function verdict(anomalies: ElleAnomaly[], counts: Partial<Record<ElleAnomalyKind, number>>, stats: ListAppendStats, bound?: string): ListAppendResult {
  const dup = counts['duplicate-appends'] ?? 0;
  const total = Object.values(counts).reduce((a: number, b) => a + (b ?? 0), 0);
  if (total > dup) return { valid: false, anomalies, stats };
  if (bound !== undefined) return { valid: 'unknown', anomalies, stats, reason: bound };
  if (dup > 0) return { valid: 'unknown', anomalies, stats, reason: `${dup} appended value${dup === 1 ? '' : 's'} repeat on a key: appended values must be unique per key` };
  if (stats.committed === 0) return { valid: 'unknown', anomalies, stats, reason: 'nothing committed: no transaction is known to have committed' };
  return { valid: true, anomalies, stats };
}

/** The first read of a transaction that shows a value the transaction appends to that key only later. */
function futureRead(mops: readonly ListAppendMop[]): { mop: ListAppendMop & { f: 'r' }; value: number } | undefined {
  const later = new Map<KeyName, Map<number, number>>(); // key -> value -> index of its first append
  mops.forEach((m, j) => {
    if (m.f !== 'append') return;
    let l = later.get(m.key);
    if (!l) later.set(m.key, (l = new Map()));
    if (!l.has(m.value)) l.set(m.value, j);
  });
  for (let j = 0; j < mops.length; j++) {
    const m = mops[j]!;
    if (m.f !== 'r' || m.value === null) continue;
    const l = later.get(m.key);
    if (!l) continue;
    const x = m.value.find((v) => (l.get(v) ?? -1) > j);
    if (x !== undefined) return { mop: m, value: x };
  }
  return undefined;
}

const DESCRIBE: Record<CycleKind, string> = {
  G0: 'G0 (write cycle): a cycle of ww edges',
  G1c: 'G1c (circular information flow): a cycle of ww and wr edges',
  'G-single': 'G-single (read skew): a cycle with exactly one rw edge',
  G2: 'G2 (anti-dependency cycle): a cycle with more than one rw edge',
};

function classify(steps: readonly CycleStep[]): ElleAnomalyKind {
  const rw = steps.filter((s) => s.edge === 'rw').length;
  const wr = steps.some((s) => s.edge === 'wr');
  const base: CycleKind = rw === 0 ? (wr ? 'G1c' : 'G0') : rw === 1 ? 'G-single' : 'G2';
  return steps.some((s) => s.edge === 'rt') ? `${base}-realtime` : base;
}

/** Tarjan's strongly connected components of `nodes` over edges whose kinds meet `mask` (iterative). */
function tarjan(nodes: readonly number[], out: ReadonlyArray<Map<number, EdgeInfo> | undefined>, mask: number, within?: ReadonlySet<number>): number[][] {
  const index = new Map<number, number>();
  const low = new Map<number, number>();
  const onStack = new Set<number>();
  const stack: number[] = [];
  const comps: number[][] = [];
  let next = 0;
  const succ = (v: number): number[] => {
    const r: number[] = [];
    for (const [w, e] of out[v] ?? []) if (e.mask & mask && (!within || within.has(w))) r.push(w);
    return r;
  };
  for (const root of nodes) {
    if (index.has(root)) continue;
    const work: Array<{ v: number; succ: number[]; i: number }> = [];
    const open = (v: number): void => {
      index.set(v, next);
      low.set(v, next++);
      stack.push(v);
      onStack.add(v);
      work.push({ v, succ: succ(v), i: 0 });
    };
    open(root);
    while (work.length > 0) {
      const f = work[work.length - 1]!;
      if (f.i < f.succ.length) {
        const w = f.succ[f.i++]!;
        if (!index.has(w)) open(w);
        else if (onStack.has(w)) low.set(f.v, Math.min(low.get(f.v)!, index.get(w)!));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const p = work[work.length - 1]!.v;
        low.set(p, Math.min(low.get(p)!, low.get(f.v)!));
      }
      if (low.get(f.v) === index.get(f.v)) {
        const comp: number[] = [];
        let w: number;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          comp.push(w);
        } while (w !== f.v);
        comps.push(comp.reverse());
      }
    }
  }
  return comps;
}

type Hop = { from: number; to: number; bit: number };

/** Bounded breadth-first searches for shortest paths inside a component. */
class CycleSearch {
  steps = 0;
  truncated = false;
  constructor(
    private readonly out: ReadonlyArray<Map<number, EdgeInfo> | undefined>,
    private readonly maxSteps: number,
  ) {}

  /** The weakest kind of an edge among `mask`. */
  private bit(from: number, to: number, mask: number): number {
    const m = this.out[from]!.get(to)!.mask & mask;
    return KINDS.find(([b]) => m & b)![0];
  }

  /** Counts a step; false once past the bound (unless `force`: the one evidence cycle is always found). */
  private step(force: boolean): boolean {
    this.steps++;
    if (this.steps <= this.maxSteps || force) return true;
    this.truncated = true;
    return false;
  }

  /** BFS from `src`: the parent of every node reached (over `mask`, inside `within`), or undefined past the bound. */
  reach(src: number, mask: number, within: ReadonlySet<number>, force = false, stopAt?: number): Map<number, number> | undefined {
    const parent = new Map<number, number>([[src, src]]);
    let frontier = [src];
    while (frontier.length > 0) {
      const nextFrontier: number[] = [];
      for (const v of frontier) {
        for (const [w, e] of this.out[v] ?? []) {
          if (!this.step(force)) return undefined;
          if (!(e.mask & mask) || !within.has(w)) continue;
          if (w === stopAt && !parent.has(w)) {
            parent.set(w, v);
            return parent;
          }
          if (parent.has(w)) continue;
          parent.set(w, v);
          nextFrontier.push(w);
        }
      }
      frontier = nextFrontier;
    }
    return parent;
  }

  /** The path src → dst from a `reach` of src that reached dst. */
  pathFromParents(src: number, dst: number, parent: ReadonlyMap<number, number>, mask = WW | WR): Hop[] {
    const nodes = [dst];
    for (let v = dst; v !== src; ) nodes.push((v = parent.get(v)!));
    nodes.reverse();
    const hops: Hop[] = [];
    for (let i = 0; i + 1 < nodes.length; i++) hops.push({ from: nodes[i]!, to: nodes[i + 1]!, bit: this.bit(nodes[i]!, nodes[i + 1]!, mask) });
    return hops;
  }

  /** A shortest path src → dst (src ≠ dst) over `mask` inside `within`, or undefined. */
  path(src: number, dst: number, mask: number, within: ReadonlySet<number>, force = false): Hop[] | undefined {
    if (src === dst) return [];
    const parent = this.reach(src, mask, within, force, dst);
    if (!parent?.has(dst)) return undefined;
    return this.pathFromParents(src, dst, parent, mask);
  }

  /** A shortest cycle through `v` over `mask` inside `within`. */
  cycleThrough(v: number, mask: number, within: ReadonlySet<number>, force = false): Hop[] | undefined {
    let best: Hop[] | undefined;
    for (const [w, e] of this.out[v] ?? []) {
      if (!(e.mask & mask) || !within.has(w)) continue;
      const p = this.path(w, v, mask, within, force);
      if (p && (!best || p.length + 1 < best.length)) best = [{ from: v, to: w, bit: this.bit(v, w, mask) }, ...p];
      if (best || this.truncated) break;
    }
    return best;
  }

  /** Some edge of kind `bit` and none of `exclude` between two nodes of `nodes` (inside `within`). */
  edgeIn(nodes: readonly number[], bit: number, exclude: number, within: ReadonlySet<number>): { from: number; to: number } | undefined {
    for (const a of nodes) for (const [b, e] of this.out[a] ?? []) if (e.mask & bit && !(e.mask & exclude) && within.has(b)) return { from: a, to: b };
    return undefined;
  }
}

/** `read` is a prefix of `order`. */
function isPrefix(read: readonly number[], order: readonly number[]): boolean {
  if (read.length > order.length) return false;
  for (let i = 0; i < read.length; i++) if (read[i] !== order[i]) return false;
  return true;
}

/** A read `v` agrees with what the transaction knew: `base` (its last read; undefined: none) then its appends `extra`. */
function consistent(base: readonly number[] | undefined, extra: readonly number[], v: readonly number[]): boolean {
  if (base !== undefined) {
    if (v.length !== base.length + extra.length) return false;
    for (let i = 0; i < base.length; i++) if (v[i] !== base[i]) return false;
  } else if (v.length < extra.length) return false;
  const off = v.length - extra.length;
  for (let i = 0; i < extra.length; i++) if (v[off + i] !== extra[i]) return false;
  return true;
}
