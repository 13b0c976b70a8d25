/**
 * Transaction workloads over any TxApi (bench/tx-systems.ts): the two checked ones — list-append
 * (the Elle-style dependency-cycle check, src/check's checkListAppend, plus atomicity and read
 * checks) and bank transfers with audits (conservation, src/check's checkBank) — run concurrently
 * by several in-process clients; and the two measured ones of `bench tx` — YCSB-T-like
 * read / read-modify-write transactions (uniform = low contention, Zipf 0.99 = high) and SmallBank.
 */
import { createPrng, PmrpcError, type Prng } from '../pmem/index.js';
import { checkAppendHistory, checkAppendSerializable, checkBankHistory, type TxRecord } from '../src/testing/crash/index.js';
import type { AppProblem } from '../src/apps/index.js';
import type { TxOutcome } from '../src/apps/tx/index.js';
import { zipf } from './kv.js';
import type { TxApi, TxDeployment, TxSystemFactory } from './tx-systems.js';

const ABORT_CODES = new Set(['PMRPC_ERR_TX_CONFLICT', 'PMRPC_ERR_TX_TOO_LARGE']);

/** One attempt: begin, the body, commit. A body that loses a conflict (coded) is an abort. */
export async function attempt(api: TxApi, body: (api: TxApi) => Promise<void>): Promise<TxOutcome> {
  await api.begin();
  try {
    await body(api);
  } catch (e) {
    if (e instanceof PmrpcError && ABORT_CODES.has(e.code)) {
      api.rollback();
      return { status: 'aborted', txid: 0n, code: e.code };
    }
    api.rollback();
    throw e;
  }
  return api.commit();
}

export const listBytes = (l: readonly number[]): Uint8Array => {
  const b = new Uint8Array(l.length * 4);
  const dv = new DataView(b.buffer);
  l.forEach((x, i) => dv.setUint32(i * 4, x, true));
  return b;
};
export const bytesList = (b: Uint8Array): number[] => {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return Array.from({ length: b.length >> 2 }, (_, i) => dv.getUint32(i * 4, true));
};
export const balanceOf = (b: Uint8Array): bigint => (b.length >= 8 ? new DataView(b.buffer, b.byteOffset, b.byteLength).getBigInt64(0, true) : 0n);
export const balanceBytes = (v: bigint): Uint8Array => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigInt64(0, v, true);
  return b;
};

export interface CheckRun {
  problems: AppProblem[];
  committed: number;
  aborted: number;
  history: TxRecord[];
}

export interface CheckOptions {
  shards: number;
  clients: number;
  txPerClient: number;
  keys: number;
  seed: number;
  /** Baselines, test-only mutant (see TxDeployOptions). */
  skipValidation?: boolean;
}

function deploy(f: TxSystemFactory, o: CheckOptions, value: 'list' | 'balance', balance: number): TxDeployment {
  return f.start({ shards: o.shards, keysPerShard: Math.ceil(o.keys / o.shards), clients: o.clients + 1, value, initialBalance: balance, items: Math.ceil(o.keys / o.shards) + o.clients * o.txPerClient * 4 + 64, seed: o.seed, ...(o.skipValidation === true ? { skipValidation: true } : {}) });
}

/** Reads every key in one transaction (retried until it commits). */
async function readAll(api: TxApi, keys: number): Promise<Map<number, Uint8Array>> {
  for (let i = 0; i < 1000; i++) {
    const out = new Map<number, Uint8Array>();
    const o = await attempt(api, async (t) => {
      for (let k = 0; k < keys; k++) out.set(k, await t.read(k));
    });
    if (o.status === 'committed') return out;
  }
  throw new Error('the final read never committed');
}

/**
 * List-append: each transaction reads 1–3 keys and appends a unique element to 1–2 of them (read
 * for update first); then one transaction reads every list. Checks: Elle-style serializability
 * (G0, G1a–c, G-single, G2), every committed append present and no aborted one, every committed
 * read a prefix of the final list, no fractured read.
 */
export async function runAppendCheck(f: TxSystemFactory, o: CheckOptions): Promise<CheckRun> {
  const d = deploy(f, o, 'list', 0);
  try {
    const history: TxRecord[] = [];
    let next = 1;
    let time = 0;
    await Promise.all(
      Array.from({ length: o.clients }, async (_, c) => {
        const api = d.client(c);
        const prng = createPrng(o.seed * 7919 + c);
        for (let i = 0; i < o.txPerClient; i++) {
          const keys = [...new Set(Array.from({ length: prng.int(1, 3) }, () => prng.int(0, o.keys - 1)))];
          const appendTo = new Set(keys.filter((_, j) => j === 0 || prng.int(0, 1) === 0));
          const rec: TxRecord = { id: history.length + 1, process: c, type: 'info', mops: [], kind: 'append', call: time++, ret: undefined };
          history.push(rec);
          const mops: TxRecord['mops'] = [];
          // One unique element, appended to every key the transaction appends to (as Elle's list-append wants).
          const x = next++;
          const out = await attempt(api, async (t) => {
            mops.length = 0;
            for (const k of keys) {
              const l = bytesList(await t.read(k, appendTo.has(k)));
              mops.push({ f: 'r', key: k, value: l });
              if (appendTo.has(k)) {
                await t.write(k, listBytes([...l, x]));
                mops.push({ f: 'append', key: k, value: x });
              }
            }
          });
          rec.mops = mops;
          rec.type = out.status === 'committed' ? 'ok' : out.status === 'aborted' ? 'fail' : 'info';
          rec.ret = time++;
          rec.txid = String(out.txid);
        }
      }),
    );
    const finals = new Map([...(await readAll(d.client(o.clients), o.keys))].map(([k, v]) => [k, bytesList(v)]));
    const problems = [...checkAppendHistory(history, finals), ...checkAppendSerializable(history, finals)];
    return { problems, committed: history.filter((r) => r.type === 'ok').length, aborted: history.filter((r) => r.type === 'fail').length, history };
  } finally {
    d.close();
  }
}

/** Bank: transfers between two accounts (read for update), and audits that read every account; the total is constant. */
export async function runBankCheck(f: TxSystemFactory, o: CheckOptions, balance = 100): Promise<CheckRun> {
  const d = deploy(f, o, 'balance', balance);
  try {
    const history: TxRecord[] = [];
    let time = 0;
    await Promise.all(
      Array.from({ length: o.clients }, async (_, c) => {
        const api = d.client(c);
        const prng = createPrng(o.seed * 7907 + c);
        // An audit is retried until it commits (bounded): under contention a wide read-only transaction often loses.
        let retries = 0;
        for (let i = 0; i < o.txPerClient; i++) {
          const audit = prng.int(0, 3) === 0 || (retries > 0 && retries < 20);
          const rec: TxRecord = { id: history.length + 1, process: c, type: 'info', mops: [], kind: audit ? 'audit' : 'transfer', call: time++, ret: undefined };
          history.push(rec);
          const balances = new Map<number, bigint>();
          const out = await attempt(api, async (t) => {
            balances.clear();
            if (audit) {
              for (let k = 0; k < o.keys; k++) balances.set(k, balanceOf(await t.read(k)));
              return;
            }
            const a = prng.int(0, o.keys - 1);
            const b = (a + prng.int(1, o.keys - 1)) % o.keys;
            const amount = BigInt(prng.int(1, 20));
            const va = balanceOf(await t.read(a, true));
            const vb = balanceOf(await t.read(b, true));
            await t.write(a, balanceBytes(va - amount));
            await t.write(b, balanceBytes(vb + amount));
          });
          rec.type = out.status === 'committed' ? 'ok' : out.status === 'aborted' ? 'fail' : 'info';
          rec.ret = time++;
          if (audit && rec.type === 'ok') rec.balances = new Map(balances);
          retries = audit && rec.type === 'fail' ? retries + 1 : 0;
        }
      }),
    );
    const finals = new Map([...(await readAll(d.client(o.clients), o.keys))].map(([k, v]) => [k, balanceOf(v)]));
    const problems = checkBankHistory(history, finals, BigInt(balance * o.keys));
    return { problems, committed: history.filter((r) => r.type === 'ok').length, aborted: history.filter((r) => r.type === 'fail').length, history };
  } finally {
    d.close();
  }
}

// ------------------------------------------------------------------ measured workloads

export type TxWorkloadName = 'ycsb-low' | 'ycsb-high' | 'smallbank';

export interface TxWorkload {
  name: TxWorkloadName;
  keys: number;
  value: 'balance';
  initialBalance: number;
  /** The next transaction's body for one client. */
  next(prng: Prng): (api: TxApi) => Promise<void>;
}

/** YCSB-T-like: 4 operations per transaction, each a read (50 %) or a read-modify-write of an 8-byte counter. */
export function ycsbT(name: 'ycsb-low' | 'ycsb-high', keys: number): TxWorkload {
  const pick = name === 'ycsb-high' ? zipf(keys, 0.99) : (p: Prng) => p.int(0, keys - 1);
  return {
    name,
    keys,
    value: 'balance',
    initialBalance: 0,
    next(prng) {
      const ops: Array<{ key: number; rmw: boolean }> = [];
      const seen = new Set<number>();
      while (ops.length < 4) {
        const key = pick(prng);
        if (seen.has(key)) continue;
        seen.add(key);
        ops.push({ key, rmw: prng.int(0, 1) === 0 });
      }
      return async (t) => {
        for (const op of ops) {
          const v = balanceOf(await t.read(op.key, op.rmw));
          if (op.rmw) await t.write(op.key, balanceBytes(v + 1n));
        }
      };
    },
  };
}

/**
 * SmallBank (as FORD runs it, scaled down): `accounts` customers, each a checking (key 2a) and a
 * savings (2a + 1) balance; 90 % of the transactions pick among the 4 % hot accounts. Mix:
 * Amalgamate 15 %, Balance 15 % (read-only), DepositChecking 15 %, SendPayment 25 %,
 * TransactSavings 15 %, WriteCheck 15 %.
 */
export function smallBank(accounts: number): TxWorkload {
  const hot = Math.max(2, Math.floor(accounts * 0.04));
  const account = (p: Prng): number => (p.int(0, 99) < 90 ? p.int(0, hot - 1) : p.int(0, accounts - 1));
  const two = (p: Prng): [number, number] => {
    const a = account(p);
    let b = account(p);
    while (b === a) b = p.int(0, accounts - 1);
    return [a, b];
  };
  const chk = (a: number): number => 2 * a;
  const sav = (a: number): number => 2 * a + 1;
  const add = async (t: TxApi, k: number, d: bigint): Promise<void> => {
    const v = balanceOf(await t.read(k, true));
    await t.write(k, balanceBytes(v + d));
  };
  return {
    name: 'smallbank',
    keys: accounts * 2,
    value: 'balance',
    initialBalance: 10_000,
    next(prng) {
      const r = prng.int(0, 99);
      const amount = BigInt(prng.int(1, 100));
      if (r < 15) {
        const [a, b] = two(prng);
        return async (t) => {
          // Amalgamate: move all of a's funds into b's checking.
          const s = balanceOf(await t.read(sav(a), true));
          const c = balanceOf(await t.read(chk(a), true));
          await t.write(sav(a), balanceBytes(0n));
          await t.write(chk(a), balanceBytes(0n));
          await add(t, chk(b), s + c);
        };
      }
      const a = account(prng);
      if (r < 30)
        return async (t) => {
          await t.read(sav(a));
          await t.read(chk(a));
        };
      if (r < 45) return (t) => add(t, chk(a), amount);
      if (r < 70) {
        const [x, y] = two(prng);
        return async (t) => {
          await add(t, chk(x), -amount);
          await add(t, chk(y), amount);
        };
      }
      if (r < 85) return (t) => add(t, sav(a), amount);
      return async (t) => {
        const s = balanceOf(await t.read(sav(a)));
        const c = balanceOf(await t.read(chk(a), true));
        await t.write(chk(a), balanceBytes(c - (s + c < amount ? amount + 1n : amount)));
      };
    },
  };
}
