// Real crashes of PRISM-TX (issue 13 item 7): three shard processes (`pmrpc serve --app tx
// --cluster FILE`, PM files, TCP, each running the resolver agent over node-to-node links) and four
// bank-client processes, under the real-crash Supervisor (src/cluster/tx-crash.ts): SIGKILLs of
// clients while a commit is in flight, of one shard, of every shard at once, each restarted on the
// same file (a client as a new incarnation of its slot); at the end every client is held at a
// commit point and SIGKILLed for good, so the shards alone must roll its transaction forward.
// Checks: nothing in doubt and nothing PREPARED or locked in any PM file; bank conservation in
// every committed audit and in the final state; every committed transfer on both of its accounts'
// version chains, no aborted one, each undecided one on both or neither; the shards' audits.
// PMRPC_KILLS sets the number of kills (default 10 in npm test; npm run test:deep runs 52: test/deep/tx-sigkill.test.ts); PMRPC_SEED the seeded choices.
import t from 'tap';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
const KILLS = process.env.PMRPC_KILLS !== undefined ? Number(process.env.PMRPC_KILLS) : 10;
t.comment(`seed ${seed}, ${KILLS} kills (PMRPC_SEED / PMRPC_KILLS to change)`);
t.setTimeout(900_000);

const MAIN = fileURLToPath(new URL('../../../dist/cli/main.js', import.meta.url));
if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npx tsc -p tsconfig.json\` first`);
// The harness from the compiled tree (its client processes run dist/src/cluster/tx-client-proc.js).
const { runTxRealCrash } = (await import(new URL('../../../dist/src/cluster/index.js', import.meta.url).href)) as typeof import('../../../src/cluster/index.js');

t.test(`SIGKILL of shard and client processes mid-commit (${KILLS} kills), restart, the shards resolve, nothing lost or left prepared`, async (t) => {
  const r = await runTxRealCrash({ mainScript: MAIN, seed, kills: KILLS });
  t.comment(JSON.stringify({ ...r, lost: r.lost.length, atomicity: r.atomicity.length, bank: r.bank.length, audit: r.audit.length }));
  t.equal(r.kills.total, KILLS, `${r.kills.total} kills: ${r.kills.clients + r.kills.finalClients} of clients (${r.kills.clientsMidCommit} mid-commit), ${r.kills.shard} of one shard, ${r.kills.allShards} of all shards`);
  t.ok(r.kills.clientsMidCommit > 0, 'some client was killed with its commit in flight');
  t.ok(r.transactions.committed > 0, `${r.transactions.committed} committed, ${r.transactions.aborted} aborted, ${r.transactions.unknown} undecided at their client`);
  t.equal(r.held, 4, 'every client was held at a commit point and SIGKILLed there');
  t.same(r.errors, [], 'the run went through');
  t.same(r.lost, [], 'no acknowledged transaction lost');
  t.same(r.atomicity, [], 'atomicity: committed on both accounts, aborted on none, undecided all-or-nothing, held ones rolled forward by the shards');
  t.same(r.bank, [], 'bank conservation in every committed audit and the final state');
  t.same(r.audit, [], 'nothing PREPARED or locked in any PM file; every shard audits clean');
  t.equal(r.preparedAtEnd, 0);
  t.equal(r.violations, 0);
});
