// The one strategy table (flush/strategies.ts, extended by name in src/rpc/strategies.ts): every
// record is consistent, the exported views are computed from it, and no code outside the two
// tables decides by a strategy's name (a switch case, a comparison, a name set).
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FLUSH_STRATEGIES, FLUSH_STRATEGY_TABLE, flushStrategy, type FlushStrategyRecord } from '../../flush/index.js';
import { ACK_STRATEGIES, ALWAYS_CORRECT, checkStrategy, COMPLETION_STRATEGIES, COUPLED_STRATEGIES, RPC_STRATEGIES, RPC_STRATEGY_TABLE, rpcStrategy, SEND_STRATEGIES, type RpcStrategyRecord } from '../../src/rpc/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The rules a record obeys; returns the broken ones. */
function broken(r: FlushStrategyRecord | RpcStrategyRecord): string[] {
  const coupled = 'coupled' in r && r.coupled;
  const out: string[] = [];
  const rule = (ok: boolean, what: string): void => void (ok || out.push(what));
  rule(r.serverAcks === (r.durableAt === 'ack'), 'the server acknowledges exactly when the strategy is durable at the ACK');
  rule(coupled === (r.durableAt === 'reply'), 'a coupled strategy, and only one, is durable at its reply');
  rule(!coupled || (!r.serverAcks && r.follow === 'none'), 'a coupled strategy has no separate durable signal (no ACK, no FLUSH/READ/flush request)');
  rule(r.durableAt !== 'completion' || r.follow === 'flush' || r.follow === 'read', 'durable at its own completion: the chain ends with a FLUSH or READ');
  rule((r.follow === 'flush-request') === (r.arrives === 'flush-request'), 'a flush request is what tells the server of the entry');
  rule(r.follow !== 'flush-request' || r.serverAcks, 'a flush request is answered by an ACK');
  rule((r.request === 'send') === (r.arrives === 'recv'), 'a SENT entry arrives by its receive completion, a WRITTEN one never does');
  rule(r.durableAt !== 'never' || (!r.alwaysCorrect && r.follow === 'none' && !r.serverAcks), 'never durable: no durable signal, never correct');
  rule(r.follow !== 'read' || !r.alwaysCorrect, 'read-after-write is only correct without DDIO (or with eADR)');
  rule(r.follow !== 'flush' || r.durableAt === 'completion', 'a FLUSH in the chain is the durable signal');
  return out;
}

t.test('every flush record is consistent and named by its key', async (t) => {
  t.same(FLUSH_STRATEGIES, Object.keys(FLUSH_STRATEGY_TABLE));
  for (const [k, r] of Object.entries(FLUSH_STRATEGY_TABLE)) {
    t.equal(r.name, k, `${k}: name`);
    t.same(broken(r), [], `${k}: consistent`);
    t.ok(Object.isFrozen(r), `${k}: frozen`);
    t.equal(flushStrategy(k), r, `${k}: looked up`);
  }
  t.throws(() => flushStrategy('farm'), TypeError, 'a coupled baseline is no flush strategy');
  t.throws(() => flushStrategy('toString'), TypeError, 'no inherited key is a strategy');
});

t.test('the rpc table extends each flush record by name, adds the coupled baselines, and is consistent', async (t) => {
  t.same(RPC_STRATEGIES, Object.keys(RPC_STRATEGY_TABLE));
  for (const [k, r] of Object.entries(RPC_STRATEGY_TABLE)) {
    t.equal(r.name, k, `${k}: name`);
    t.same(broken(r), [], `${k}: consistent`);
    t.ok(Object.isFrozen(r), `${k}: frozen`);
    t.equal(rpcStrategy(k), r, `${k}: looked up`);
    t.equal(checkStrategy(k), k);
  }
  for (const f of FLUSH_STRATEGIES) t.same(RPC_STRATEGY_TABLE[f], { ...FLUSH_STRATEGY_TABLE[f], coupled: false }, `${f}: the flush record, not a second copy`);
  const coupled = RPC_STRATEGIES.filter((s) => RPC_STRATEGY_TABLE[s].coupled);
  t.same(coupled, ['farm', 'darpc']);
  t.same([...COUPLED_STRATEGIES].sort(), [...coupled].sort());
  // darpc's request is a SEND into a receive buffer posted at its ring slot (the server posts and reposts them).
  t.equal(RPC_STRATEGY_TABLE.darpc.arrives, 'recv');
  t.equal(RPC_STRATEGY_TABLE.farm.arrives, 'memory');
  t.throws(() => rpcStrategy('rdma'), TypeError);
  t.throws(() => checkStrategy(undefined), TypeError);
});

t.test('the exported views are the table filtered', async (t) => {
  const where = (p: (r: RpcStrategyRecord) => boolean) => RPC_STRATEGIES.filter((s) => p(RPC_STRATEGY_TABLE[s]));
  t.same([...SEND_STRATEGIES], ['sflush', 'srflush', 'darpc']);
  t.same([...SEND_STRATEGIES], where((r) => r.request === 'send'));
  t.same([...ACK_STRATEGIES], ['wrflush', 'srflush', 'gpspm']);
  t.same([...COMPLETION_STRATEGIES], ['wflush', 'sflush', 'raw']);
  t.same(ALWAYS_CORRECT, ['wflush', 'sflush', 'wrflush', 'srflush', 'gpspm', 'farm', 'darpc']);
});

// ------------------------------------------------------------------ no decision by name elsewhere

const NAMES = RPC_STRATEGIES;
/** Names no other vocabulary of the repository uses ('raw', 'none' and 'farm' are also other things' names). */
const UNIQUE = NAMES.filter((n) => !['raw', 'none', 'farm'].includes(n));
const alt = (ns: readonly string[]) => ns.join('|');
const TABLES = new Set(['flush/strategies.ts', 'src/rpc/strategies.ts']);

/** The decisions by name in one source text: [line, what] pairs. */
function nameDecisions(text: string): Array<[number, string]> {
  const rules: Array<[RegExp, string]> = [
    [new RegExp(`\\bcase\\s+'(${alt(UNIQUE)})'`), 'a switch case on a strategy name'],
    [new RegExp(`[!=]==?\\s*'(${alt(UNIQUE)})'|'(${alt(UNIQUE)})'\\s*[!=]==?`), 'a comparison with a strategy name'],
    [new RegExp(`strateg\\w*(\\(\\))?\\s*[!=]==?\\s*'(${alt(NAMES)})'|'(${alt(NAMES)})'\\s*[!=]==?\\s*[\\w.#]*strateg`, 'i'), 'a comparison of a strategy with a name'],
    [new RegExp(`new Set\\b[^;]*'(${alt(UNIQUE)})'`), 'a set of strategy names'],
    [new RegExp(`\\.(includes|has)\\(\\s*'(${alt(UNIQUE)})'`), 'a membership test of a strategy name'],
  ];
  const out: Array<[number, string]> = [];
  text.split('\n').forEach((line, i) => {
    if (/^\s*(\/\/|\*|\/\*)/.test(line)) return; // comments describe strategies by name
    for (const [re, what] of rules) if (re.test(line)) out.push([i + 1, what]);
  });
  return out;
}

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir)) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) out.push(...tsFiles(p));
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

t.test('the check finds each kind of decision by name', async (t) => {
  t.same(nameDecisions("    case 'srflush':").map(([, w]) => w), ['a switch case on a strategy name']);
  t.same(nameDecisions("if (s === 'wflush' || s === 'sflush') x();").map(([, w]) => w), ['a comparison with a strategy name']);
  t.same(nameDecisions("if (this.strategy === 'none') return;").map(([, w]) => w), ['a comparison of a strategy with a name']);
  t.same(nameDecisions("if (info.strategy !== 'farm') return;").map(([, w]) => w), ['a comparison of a strategy with a name']);
  t.same(nameDecisions("const S = new Set<RpcStrategy>(['sflush', 'darpc']);").map(([, w]) => w), ['a set of strategy names']);
  t.same(nameDecisions("if (list.includes('gpspm')) y();").map(([, w]) => w), ['a membership test of a strategy name']);
  t.same(nameDecisions("if (this.#rec.durableAt === 'never') return;"), [], 'a record field is no name');
  t.same(nameDecisions("if (protocol === 'farm') lock();"), [], "txlock's protocol farm is no strategy");
  t.same(nameDecisions("  // wflush: case 'wflush' in a comment"), []);
});

t.test('no strategy-name switch, comparison or set in src/, flush/ or cli/ outside the tables', async (t) => {
  const found: string[] = [];
  let files = 0;
  for (const dir of ['src', 'flush', 'cli']) {
    for (const f of tsFiles(join(ROOT, dir))) {
      const rel = relative(ROOT, f).split('\\').join('/');
      if (TABLES.has(rel)) continue;
      files++;
      for (const [line, what] of nameDecisions(readFileSync(f, 'utf8'))) found.push(`${rel}:${line}: ${what}`);
    }
  }
  t.ok(files > 50, `scanned ${files} files`);
  t.same(found, [], 'decide by the strategy record (flushStrategy / rpcStrategy), not by its name');
});
