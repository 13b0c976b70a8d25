// Real crashes of PRISM-RS replicas (issue 12 item 6): three `pmrpc serve --app rs` processes on
// PM files, each run by the real-crash Supervisor (src/server/supervisor.ts, as the rpc, kv and tx
// real-crash runners are) with the cluster launcher's command line (cli/cluster.ts serveArgs), SIGKILLed during load —
// one replica at a time (f = 1) and all three at once — and restarted on the same file and port
// (recovery: slots validated, free lists rebuilt, a new epoch). Two clients in this process write
// and read a few blocks the whole time and reconnect by themselves. Checkers over the whole
// history (an operation cut by a kill — NO_MAJORITY, a closed link — may or may not have
// happened): acknowledged writes survive (src/check/lost.ts), durable linearizability per block
// (WGL), replicas converge after a read of every block, and every replica's audit once settled.
// PMRPC_KILLS sets the number of kills (default 8 in npm test: one replica at a time and all three at once; npm run test:deep runs 51: test/deep/rs-sigkill.test.ts); PMRPC_SEED the seeded choices.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrng } from '../../../pmem/index.js';
import { checkLinearizable, kvModel, lostWrites, type KvInput, type KvOutput, type Operation } from '../../../src/check/index.js';
import { connectRsCluster, parseClusterSpec, type ClusterNodeSpec } from '../../../src/cluster/index.js';
import { RsErrorCodes, type RsClient } from '../../../src/apps/rs/index.js';
import { stopAll, Supervisor, Wakeup } from '../../../src/server/index.js';
import { systemClock } from '../../../pmem/index.js';
import { freePorts } from '../../cluster/helpers.js';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
const KILLS = process.env.PMRPC_KILLS !== undefined ? Number(process.env.PMRPC_KILLS) : 8;
const BLOCKS = 3;
t.comment(`seed ${seed}, ${KILLS} kills (PMRPC_SEED / PMRPC_KILLS to change)`);
t.setTimeout(900_000);

const te = new TextEncoder();
const td = new TextDecoder();
// The launcher's serve command line, from the compiled CLI (it runs dist/cli/main.js).
const { serveArgs } = (await import(new URL('../../../dist/cli/cluster.js', import.meta.url).href)) as typeof import('../../../cli/cluster.js');

t.test(`SIGKILL of replicas under load (${KILLS} kills: f = 1 and all at once), restart, nothing acknowledged lost`, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-rs-kill-'));
  const ports = await freePorts(3);
  const spec = parseClusterSpec({ version: 1, nodes: ports.map((port, i) => ({ id: `r${i}`, app: 'rs', port, pm: join(dir, `r${i}.pm`), options: { sizeBytes: 4 << 20 } })) });
  // One Supervisor per replica: a SIGKILL is kill('later'), the restart start() on the same file
  // and port; each start line, exit and acknowledgement wakes the bounded waits below.
  const events = new Wakeup(systemClock);
  const sups = spec.nodes.map((n) => new Supervisor({ args: () => serveArgs(n, undefined), clock: systemClock, log: undefined, restartsMax: KILLS + 3, name: n.id, wakeup: events }, n.pm, []));
  const start = async (i: number): Promise<void> => {
    await sups[i]!.start();
  };
  const kill = (i: number): Promise<void> => sups[i]!.kill('later');
  t.teardown(async () => {
    await stopAll(sups);
    rmSync(dir, { recursive: true, force: true });
  });
  await Promise.all(sups.map((_, i) => start(i)));

  const prng = createPrng(seed);
  let now = 0;
  const ops: Array<Operation<KvInput, KvOutput> & { error?: string }> = [];
  let stop = false;
  const clients: RsClient[] = [];
  for (let c = 0; c < 2; c++) clients.push(await connectRsCluster(spec, { client: { writerId: c + 1, majorityWaitMs: 60_000, retryDelayMs: 20 } }));
  let acknowledged = 0;
  const load = async (c: number): Promise<void> => {
    const r = prng.fork();
    for (let k = 0; !stop; k++) {
      const block = r.int(0, BLOCKS - 1);
      const write = r.int(0, 1) === 0;
      const value = `c${c}k${k}`;
      const op: (typeof ops)[number] = { client: c, input: write ? { kind: 'put', key: `b${block}`, value } : { kind: 'get', key: `b${block}` }, output: write ? null : undefined, call: ++now, ret: undefined };
      ops.push(op);
      try {
        if (write) await clients[c]!.write(block, te.encode(value));
        else {
          const v = await clients[c]!.read(block);
          op.output = v === null ? null : td.decode(v);
        }
        op.ret = ++now;
        acknowledged++;
        events.notify();
      } catch (e) {
        op.error = (e as Error).message;
        if ((e as { code?: string }).code !== RsErrorCodes.NO_MAJORITY) throw e;
      }
    }
  };
  const loads = [0, 1].map((c) => load(c));
  // A bounded wait on events (acknowledgements), not on speed.
  const waitAcks = async (n: number): Promise<void> => {
    const target = acknowledged + n;
    await events.until(() => acknowledged >= target, 15_000);
  };
  let kills = 0;
  let round = 0;
  while (kills < KILLS) {
    await waitAcks(prng.int(1, 12));
    if (round % 5 === 4 && kills + 3 <= KILLS) {
      await Promise.all([0, 1, 2].map((i) => kill(i))); // all at once: PM survives
      kills += 3;
      await Promise.all([0, 1, 2].map((i) => start(i)));
    } else {
      const i = prng.int(0, 2);
      await kill(i);
      kills++;
      await waitAcks(prng.int(0, 6)); // the others go on at a majority
      await start(i);
    }
    round++;
  }
  await waitAcks(5);
  stop = true;
  await Promise.all(loads);
  t.ok(acknowledged > KILLS, `${acknowledged} operations acknowledged across ${kills} kills`);
  // A read of every block by a fresh client, then the checkers.
  const reader = await connectRsCluster(spec, { client: { writerId: 9, majorityWaitMs: 30_000 } });
  const finals = new Map<string, string | null>();
  const history: Array<Operation<KvInput, KvOutput>> = ops.map((op) => (op.ret !== undefined && op.error === undefined ? op : { ...op, output: undefined, ret: undefined }));
  for (let b = 0; b < BLOCKS; b++) {
    const call = ++now;
    const v = await reader.read(b);
    const got = v === null ? null : td.decode(v);
    finals.set(`b${b}`, got);
    history.push({ client: -1, input: { kind: 'get', key: `b${b}` }, output: got, call, ret: ++now });
  }
  for (const c of [...clients, reader]) await c.close();
  t.same(lostWrites(history, finals), [], 'no acknowledged write lost');
  const lin = checkLinearizable(kvModel, history);
  t.equal(lin.ok, true, lin.ok === false ? `${lin.reason}: ${lin.operations.map((x) => kvModel.describe!(x)).join('; ')}` : 'durably linearizable');
  t.equal(kills, KILLS);
  const restarts = sups.map((x) => x.incarnations.length - 1);
  t.equal(restarts.reduce((a, b) => a + b, 0), KILLS, `every kill was a real SIGKILL and restart (per replica: ${restarts.join(', ')})`);
  t.same(sups.flatMap((x) => x.failures), [], 'no replica died by itself or failed to start');
});
