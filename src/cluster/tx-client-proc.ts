/**
 * One bank client of a PRISM-TX cluster as its own process (what runTxRealCrash SIGKILLs mid-commit):
 * transfers between two accounts and audits of every account, for ever, until SIGTERM. Each
 * account value is ⟨balance i64, writer txid u64⟩, so the checker can walk every account's
 * version chain back from its final value. Before each commit the client appends its intent
 * (txid, accounts, amounts, the writers it read) to its history file, and after it the outcome
 * (appendFileSync: a SIGKILL loses nothing written), and prints each of those lines on stdout too,
 * after one JSON line once connected (the Supervisor's start line).
 *
 * node tx-client-proc.js --cluster FILE --client C --incarnation N --seed S --history FILE
 */
import { appendFileSync } from 'node:fs';
import { createPrng, exitWithParent, systemClock } from '../../pmem/index.js';
import { TxClient, txName, type TxOutcome } from '../apps/tx/index.js';
import { loadClusterFile } from './spec.js';
import { txShardSource, txShards } from './tx.js';
import { decodeAccount, encodeAccount } from './tx-crash.js';

function arg(name: string): string {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? process.argv[i + 1] : undefined;
  if (v === undefined) throw new TypeError(`--${name} is required`);
  return v;
}

async function main(): Promise<void> {
  exitWithParent(true); // run by the Supervisor: dies with it
  const spec = loadClusterFile(arg('cluster'));
  const client = Number(arg('client'));
  const incarnation = Number(arg('incarnation'));
  const history = arg('history');
  const prng = createPrng(Number(arg('seed')) >>> 0);
  const shards = txShards(spec);
  const accounts = shards.length * (shards[0]!.options.keysPerShard ?? 16);
  const links = txShardSource(spec, { name: `tx-client-${client}` });
  // The history file first (what the checks read), then the same line on stdout: the supervisor
  // hands it to the runner the moment it arrives (its waits wake on it).
  const log = (v: Record<string, unknown>): void => {
    const line = `${JSON.stringify({ ...v, client, incarnation })}\n`;
    appendFileSync(history, line);
    process.stdout.write(line);
  };
  // --hold-after-prepare: the first transaction that reaches its commit point is held there (its
  // records durable on every participant, nothing installed) until this process is SIGKILLed.
  const hold = process.argv.includes('--hold-after-prepare');
  const afterPrepare = hold
    ? async (txid: bigint): Promise<void> => {
        log({ t: 'held', txid: String(txid) });
        await new Promise<void>(() => setInterval(() => undefined, 1000));
      }
    : undefined;
  const tx = new TxClient(links.source, { client, incarnation, clock: systemClock, faults: {}, afterPrepare });
  const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
  let stop = false;
  process.on('SIGTERM', () => (stop = true));
  process.stdout.write(`${JSON.stringify({ port: 0, recovered: { client, incarnation } })}\n`);
  while (!stop) {
    try {
      await tx.begin();
    } catch {
      await sleep(20); // an earlier transaction not settled yet (a shard down): again
      continue;
    }
    const audit = !hold && prng.int(0, 99) < 25;
    const a = prng.int(0, accounts - 1);
    const b = (a + prng.int(1, accounts - 1)) % accounts;
    const x = BigInt(prng.int(1, 9));
    const txid = tx.nextTxid;
    let intent: Record<string, unknown>;
    try {
      if (audit) {
        const balances: Record<string, string> = {};
        for (let k = 0; k < accounts; k++) balances[k] = String(decodeAccount(await tx.read(k)).balance);
        intent = { t: 'intent', kind: 'audit', txid: String(txid), balances };
      } else {
        const va = decodeAccount(await tx.read(a));
        const vb = decodeAccount(await tx.read(b));
        await tx.write(a, encodeAccount(va.balance - x, txid));
        await tx.write(b, encodeAccount(vb.balance + x, txid));
        intent = { t: 'intent', kind: 'transfer', txid: String(txid), a, b, x: String(x), prevA: String(va.writer), prevB: String(vb.writer), balA: String(va.balance - x), balB: String(vb.balance + x) };
      }
    } catch {
      tx.rollback(); // a read failed (a shard down): nothing of it was prepared
      await sleep(10);
      continue;
    }
    log(intent);
    let out: TxOutcome | undefined;
    let error: string | undefined;
    try {
      out = await tx.commit();
    } catch (e) {
      error = (e as { code?: string }).code ?? String(e);
    }
    log({ t: 'outcome', txid: String(txid), name: txName(txid), status: out?.status ?? 'unknown', code: out?.code ?? error });
  }
  // The last commit's round 2 runs after commit() reported it: let it finish before the links go.
  await tx.settled().catch(() => undefined);
  links.close();
  process.exit(0);
}

await main();
