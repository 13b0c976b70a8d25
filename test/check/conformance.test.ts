// Conformance with the checkers' peers: the linearizability checker on Porcupine's published test
// histories (Jepsen etcd registers, key-value histories) and the list-append checker on the cases
// of Elle's list-append tests, each asserting the verdict the peer's own tests assert. The data,
// with its licences, lives outside the repository in ../shared/conformance/ (see its README); the
// test skips, saying so, when that folder is absent. Mapping of Elle's anomaly names to pmrpc's and
// the cases where a verdict is a matter of definition: docs/checkers.md, "Conformance with peers".
import t from 'tap';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkLinearizable, type Model, type Operation } from '../../src/check/linearizability.js';
import { checkListAppend, type ElleAnomalyKind, type ListAppendMop, type ListAppendTxn } from '../../src/check/elle.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const DATA = resolve(root, '..', 'shared', 'conformance');

// ------------------------------------------------------------------ Porcupine: etcd registers

type EtcdInput = { op: 'read' } | { op: 'write'; value: number } | { op: 'cas'; from: number; to: number };
/** read: the value (null: absent); write: null; cas: whether it swapped. */
type EtcdOutput = number | null | boolean;

/** Porcupine's etcd model: one register, initially absent; a failed cas did not swap. */
const etcdModel: Model<number | null, EtcdInput, EtcdOutput> = {
  init: () => null,
  step(state, input, output) {
    switch (input.op) {
      case 'read':
        return output === undefined || output === state ? state : undefined;
      case 'write':
        return input.value;
      case 'cas': {
        const swaps = state === input.from;
        if (output !== undefined && output !== swaps) return undefined;
        return swaps ? input.to : state;
      }
    }
  },
  key: (s) => (s === null ? 'nil' : String(s)),
};

const LINE = /^INFO\s+jepsen\.util\s+-\s+(\d+)\s+:(invoke|ok|fail|info)\s+:(read|write|cas)\s+(.*?)\s*$/;

/** A Jepsen etcd log as operations: an :info one (timed out) never returns; a :fail cas did not swap. */
function parseEtcd(text: string): Operation<EtcdInput, EtcdOutput>[] {
  const open = new Map<number, Operation<EtcdInput, EtcdOutput>>();
  const ops: Operation<EtcdInput, EtcdOutput>[] = [];
  const gone = new Set<Operation<EtcdInput, EtcdOutput>>();
  let time = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const m = LINE.exec(line);
    if (!m) throw new Error(`unparsed line: ${line}`);
    const [, p, type, f, arg] = m;
    const proc = Number(p);
    time++;
    if (type === 'invoke') {
      let input: EtcdInput;
      if (f === 'read') input = { op: 'read' };
      else if (f === 'write') input = { op: 'write', value: Number(arg) };
      else {
        const [from, to] = arg!.replace(/[[\]]/g, '').trim().split(/\s+/).map(Number);
        input = { op: 'cas', from: from!, to: to! };
      }
      const op: Operation<EtcdInput, EtcdOutput> = { client: proc, input, output: undefined, call: time, ret: undefined };
      open.set(proc, op);
      ops.push(op);
      continue;
    }
    const op = open.get(proc);
    if (!op) throw new Error(`completion without invocation: ${line}`);
    open.delete(proc);
    if (type === 'info') continue; // outcome unknown: it may take effect at any time after its call
    if (type === 'fail' && f !== 'cas') {
      gone.add(op); // a failed read (timed out) did not happen and returned nothing
      continue;
    }
    op.ret = time;
    if (f === 'read') op.output = arg === 'nil' ? null : Number(arg);
    else if (f === 'write') op.output = null;
    else op.output = type === 'ok';
  }
  return ops.filter((op) => !gone.has(op));
}

// ------------------------------------------------------------------ Porcupine: key-value histories

type KvaInput = { f: 'get' | 'put' | 'append'; key: string; value: string };

/** Porcupine's key-value model: per-key strings, initially empty; append concatenates. */
const kvAppendModel: Model<string, KvaInput, string> = {
  init: () => '',
  step(state, input, output) {
    if (input.f === 'get') return output === undefined || output === state ? state : undefined;
    return input.f === 'put' ? input.value : state + input.value;
  },
  key: (s) => s,
  partition: (input) => input.key,
};

const KV_LINE = /^\{:process (\d+), :type :(invoke|ok), :f :(get|put|append), :key "([^"]*)", :value (nil|"[^"]*")\}$/;

function parseKv(text: string): Operation<KvaInput, string>[] {
  const open = new Map<number, Operation<KvaInput, string>>();
  const ops: Operation<KvaInput, string>[] = [];
  let time = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const m = KV_LINE.exec(line.trim());
    if (!m) throw new Error(`unparsed line: ${line}`);
    const [, p, type, f, key, raw] = m;
    const proc = Number(p);
    const value = raw === 'nil' ? '' : raw!.slice(1, -1);
    time++;
    if (type === 'invoke') {
      const op: Operation<KvaInput, string> = { client: proc, input: { f: f as KvaInput['f'], key: key!, value }, output: undefined, call: time, ret: undefined };
      open.set(proc, op);
      ops.push(op);
    } else {
      const op = open.get(proc);
      if (!op) throw new Error(`completion without invocation: ${line}`);
      open.delete(proc);
      op.ret = time;
      op.output = f === 'get' ? value : '';
    }
  }
  return ops;
}

interface PorcupineVerdicts {
  etcd: Record<string, { expected: boolean; test: string }>;
  kv: Record<string, { expected: boolean; test: string }>;
}

// ------------------------------------------------------------------ Elle: list-append cases

type ElleMop = [f: 'append' | 'r', key: string | number, value: number | number[] | null];
interface ElleOp {
  index: number;
  process: number;
  type: 'invoke' | 'ok' | 'fail' | 'info';
  value: ElleMop[];
}
interface ElleCase {
  id: string;
  source: string;
  elleModel: string;
  realtime: boolean;
  history: ElleOp[];
  expect: { valid?: boolean | 'unknown' | 'error'; kinds: string[]; scope: 'all' | string[]; counts?: Record<string, number>; note?: string };
}

/**
 * Elle's anomaly names as pmrpc's (docs/checkers.md, "Conformance with peers"); null: a name pmrpc
 * does not report (the verdict still has to agree).
 */
const ELLE_TO_PMRPC: Readonly<Record<string, ElleAnomalyKind | null>> = {
  G0: 'G0',
  G1a: 'G1a',
  G1b: 'G1b',
  G1c: 'G1c',
  'G-single-item': 'G-single',
  'G2-item': 'G2',
  'G-nonadjacent-item': 'G2',
  'G-single-item-realtime': 'G-single-realtime',
  'G2-item-realtime': 'G2-realtime',
  internal: 'internal',
  'future-read': 'future-read',
  'duplicate-elements': 'duplicate-elements',
  'incompatible-order': 'incompatible-order',
  'dirty-update': 'G1a',
  'lost-update': null,
  'empty-transaction-graph': null,
};

/**
 * An Elle history as transactions: an invocation and its completion (by process) make one; call
 * and return times are history positions (Elle's real-time order); an :ok read of nil is Elle's
 * initial state, the empty list; an invocation that never completes is indeterminate (info).
 */
function fromElle(history: readonly ElleOp[]): ListAppendTxn[] {
  const open = new Map<number, ElleOp>();
  const txns: ListAppendTxn[] = [];
  const mops = (op: ElleOp): ListAppendMop[] =>
    op.value.map(([f, key, v]) => (f === 'append' ? { f, key, value: v as number } : { f, key, value: v === null ? (op.type === 'ok' ? [] : null) : (v as number[]) }));
  history.forEach((op, pos) => {
    if (op.type === 'invoke') {
      open.set(op.process, { ...op, index: pos });
      return;
    }
    const inv = open.get(op.process);
    open.delete(op.process);
    txns.push({ id: op.index, process: op.process, type: op.type, mops: mops(op), call: inv?.index ?? pos, ret: pos });
  });
  for (const inv of open.values()) txns.push({ id: `${inv.index}-invoke`, process: inv.process, type: 'info', mops: mops({ ...inv, type: 'info' }), call: inv.index });
  return txns;
}

const mapKinds = (kinds: readonly string[]): Set<string> => {
  const out = new Set<string>();
  for (const k of kinds) {
    if (!(k in ELLE_TO_PMRPC)) throw new Error(`Elle anomaly ${k} is missing from ELLE_TO_PMRPC`);
    const m = ELLE_TO_PMRPC[k];
    if (m) out.add(m);
  }
  return out;
};

if (!existsSync(DATA)) {
  t.comment(`conformance data not found at ${DATA}: the peer-conformance checks are skipped (CI has it there)`);
  t.test('peer conformance (Porcupine, Elle)', { skip: `no peer data at ${DATA} (../shared/conformance/ next to the checkout)` }, async () => {});
} else {
  const porcupine = join(DATA, 'porcupine');
  const verdicts = JSON.parse(readFileSync(join(porcupine, 'verdicts.json'), 'utf8')) as PorcupineVerdicts;

  t.test('Porcupine: Jepsen etcd histories get the verdicts Porcupine asserts', async (t) => {
    const dir = join(porcupine, 'test_data', 'jepsen');
    const files = readdirSync(dir).filter((f) => f.endsWith('.log')).sort();
    let decided = 0;
    let matched = 0;
    let withVerdict = 0;
    for (const file of files) {
      const ops = parseEtcd(readFileSync(join(dir, file), 'utf8'));
      const v = verdicts.etcd[file];
      if (v === undefined) {
        t.equal(ops.length, 0, `${file}: no verdict asserted by Porcupine (an empty history)`);
        continue;
      }
      withVerdict++;
      const r = checkLinearizable(etcdModel, ops);
      if (r.ok !== 'unknown') decided++;
      if (r.ok === v.expected) matched++;
      t.equal(r.ok, v.expected, `${file} (${ops.length} operations, ${r.explored} steps): ${v.test} asserts ${v.expected}`);
    }
    t.comment(`etcd: ${decided} of ${withVerdict} histories decided at the default maxSteps, ${matched} match Porcupine`);
    t.equal(withVerdict, 102, 'every history Porcupine asserts a verdict for was run');
  });

  t.test('Porcupine: key-value histories get the verdicts Porcupine asserts', async (t) => {
    const dir = join(porcupine, 'test_data', 'kv');
    for (const [file, v] of Object.entries(verdicts.kv)) {
      const ops = parseKv(readFileSync(join(dir, file), 'utf8'));
      const r = checkLinearizable(kvAppendModel, ops);
      t.equal(r.ok, v.expected, `${file} (${ops.length} operations on ${r.partitions} keys, ${r.explored} steps): ${v.test} asserts ${v.expected}`);
      t.equal(r.keys.length, r.partitions, `${file}: a verdict per key`);
      if (v.expected === false) t.ok(r.keys.some((k) => k.ok === false), `${file}: a refuted key`);
      else t.ok(r.keys.every((k) => k.ok === true), `${file}: every key linearizable`);
    }
  });

  t.test("Elle: list-append cases get the verdicts and anomaly kinds Elle's tests assert", async (t) => {
    const cases = JSON.parse(readFileSync(join(DATA, 'elle', 'cases.json'), 'utf8')) as ElleCase[];
    let verdicts = 0;
    let kindChecks = 0;
    for (const c of cases) {
      const res = checkListAppend(fromElle(c.history), { realtime: c.realtime });
      const got = new Set<string>(res.anomalies.map((a) => a.kind));
      const say = `${c.id} [${c.elleModel}${c.realtime ? ', realtime' : ''}]: got ${res.valid} ${JSON.stringify([...got])}${res.reason ? ` (${res.reason})` : ''}`;
      const want = c.expect.valid;
      if (want === 'error') {
        // Elle refuses the history (throws :duplicate-appends with valid? :unknown); pmrpc reports it.
        t.equal(res.valid, 'unknown', `${say}: Elle refuses the history`);
        t.ok(got.has('duplicate-appends'), `${say}: duplicate-appends reported`);
        verdicts++;
      } else if (want !== undefined) {
        t.equal(res.valid, want, `${say}: Elle asserts valid ${want}`);
        verdicts++;
      }
      const expected = mapKinds(c.expect.kinds);
      const scope = c.expect.scope === 'all' ? undefined : mapKinds(c.expect.scope);
      if (scope === undefined) {
        // Elle lists every anomaly it finds: the same kinds, in pmrpc's names.
        t.same([...got].sort(), [...expected].sort(), `${say}: Elle finds ${JSON.stringify(c.expect.kinds)}`);
      } else {
        for (const k of scope) t.equal(got.has(k), expected.has(k), `${say}: ${k} ${expected.has(k) ? 'found' : 'absent'}, as Elle asserts`);
      }
      kindChecks++;
      for (const [k, n] of Object.entries(c.expect.counts ?? {})) {
        const m = ELLE_TO_PMRPC[k];
        if (m) t.equal(res.stats.counts[m] ?? 0, n, `${say}: ${n} × ${k}`);
      }
    }
    t.comment(`Elle: ${cases.length} cases; ${verdicts} verdicts and ${kindChecks} anomaly-kind assertions compared`);
  });
}
