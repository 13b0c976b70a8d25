// `pmrpc inspect` and `pmrpc check` (src/node/inspect.ts, cli/inspect.ts, cli/check.ts) on files
// of every app, made with the library (NodeHost on temp PM files; in-process shards and replicas
// written to a file): fresh and written files are sound and name their app; a damaged file still
// shows its header and layout while check fails with coded problems; nothing is ever written to
// the file; an app opened (or formatted) on another app's file names the app the file holds.
import t, { type Test } from 'tap';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { crashImages, crc32c, createPrng, HEADER_BYTES, materialize, PmemRegion, seededEntropy, systemClock } from '../../pmem/index.js';
import { QueuePair } from '../../flush/index.js';
import { TcpLink } from '../../src/transport/index.js';
import { checkFile, inspectFile, InspectErrorCodes, NodeHost } from '../../src/node/index.js';
import { AppErrorCodes, identifyArea, type AppServer } from '../../src/apps/index.js';
import { connectKvClient, kvApp, type KvAppServer } from '../../src/apps/kv/index.js';
import { rsApp, RsLocalCluster } from '../../src/apps/rs/index.js';
import { rpcApp } from '../../src/apps/rpc/index.js';
import { startLocalShards, txfarmApp, txfordApp } from '../../src/apps/txlock/index.js';
import { txApp } from '../../src/apps/tx/index.js';
import { RemoteRpcClient, RpcNode, WORKLOAD_HANDLERS, WORKLOAD_METHOD, workloadPayload } from '../../src/server/index.js';
import { txClientApi, txSystemApp, type TxSystemName } from '../../bench/tx-systems.js';
import { formatInspect } from '../../cli/inspect.js';
import { formatCheck } from '../../cli/check.js';

const seed = 11;
t.comment(`seed ${seed}`);
const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const te = new TextEncoder();
const dir = mkdtempSync(join(tmpdir(), 'pmrpc-inspect-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const sha = (f: string): string => createHash('sha256').update(readFileSync(f)).digest('hex');
const APPS = ['rpc', 'kv', 'rs', 'rslock', 'tx', 'txfarm', 'txford'] as const;

/** A fresh file of `app` made by a node host (formatted, recovered, closed in order). */
async function freshFile(app: string, name = app, appOptions: object = {}): Promise<string> {
  const pm = join(dir, `${name}.pm`);
  const node = await NodeHost.start({ app, appOptions, pmPath: pm, create: true, sizeBytes: 4 << 20, entropy: seededEntropy(createPrng(seed)) });
  await node.close();
  return pm;
}

/** An in-memory region as a PM file after an orderly close (everything written back). */
function saveRegion(region: PmemRegion, name: string): string {
  region.persist(0, region.sizeBytes);
  const st = region.crashState();
  const pm = join(dir, `${name}.pm`);
  writeFileSync(pm, materialize(st, [...crashImages(st, { engine: 'none' })][0]!));
  return pm;
}

/** Inspect and check must agree, and must leave the file as it was. */
function inspectUnchanged(t: Test, pm: string): ReturnType<typeof inspectFile> {
  const before = sha(pm);
  const r = inspectFile(pm);
  const c = checkFile(pm);
  t.equal(c.ok, r.problems.length === 0, 'check agrees with inspect');
  t.same(c.problems, r.problems);
  t.equal(sha(pm), before, 'the file is not modified');
  return r;
}

t.test('fresh files of every app (and the Pilaf baseline): the app named, layout shown, recovery dry run, audit sound', async (t) => {
  for (const app of APPS) {
    const pm = await freshFile(app);
    const r = inspectUnchanged(t, pm);
    t.equal(r.app, app, `${app}: the app is named`);
    t.same(r.problems, [], `${app}: no problems`);
    t.ok(r.layout !== undefined && Object.keys(r.layout).length > 3, `${app}: its layout`);
    t.ok(r.summary !== undefined && r.recovered !== undefined, `${app}: its summary before and after the dry run`);
    t.ok(r.recovery.ran && r.recovery.refused === undefined && r.recovery.summary !== undefined, `${app}: the dry run ran`);
    t.same(r.audit, []);
  }
  const pilaf = inspectFile(await freshFile('kv', 'pilaf', { system: 'pilaf' }));
  t.match(pilaf, { app: 'kv', system: 'pilaf', problems: [] });
  t.equal(inspectFile(join(dir, 'rpc.pm')).recovery.epochAfter, 3, 'rpc: the epoch a start would take');
});

t.test('a strict node\'s journal: inspect applies its records to its copy, as the next start replays them into the file', async (t) => {
  const pm = join(dir, 'rpc-strict.pm');
  const first = await RpcNode.start({ pmPath: pm, create: true, sizeBytes: 2 << 20, strategy: 'wflush', handlers: WORKLOAD_HANDLERS, strict: true });
  await first.close(); // orderly: a checkpoint, the journal holds nothing the file lacks
  const checkpoint = readFileSync(pm);
  const node = await RpcNode.start({ pmPath: pm, strategy: 'wflush', handlers: WORKLOAD_HANDLERS, strict: true });
  const c = await RemoteRpcClient.connect({ port: node.address().port, name: 'j' });
  for (let i = 1; i <= 5; i++) await c.rpc.call(WORKLOAD_METHOD, workloadPayload(seed, c.clientId, i)).result;
  // A machine crash now: the PM file as its last checkpoint left it (none of its unsynced writes
  // reached the disk), the journal with every acknowledged sync.
  const journal = readFileSync(`${pm}.journal`);
  c.close();
  await node.close();
  writeFileSync(pm, checkpoint);
  writeFileSync(`${pm}.journal`, journal);
  // (The raw app area may lag by the last batch's images: a start replays its synced record.)
  const applied = (r: ReturnType<typeof inspectFile>): number[] => ((r.recovery?.summary as { clients?: Array<{ appliedSeq: number }> } | undefined)?.clients ?? []).map((x) => x.appliedSeq);
  const withJournal = inspectUnchanged(t, pm);
  t.match(withJournal, { app: 'rpc', problems: [] });
  t.same(applied(withJournal), [5], 'a start would find the five calls applied: from the journal');
  rmSync(`${pm}.journal`);
  t.same(applied(inspectFile(pm)), [], 'without the journal the file alone holds none of them (not even the client)');
});

t.test('written files: rpc, kv (TCP clients of a node host), rs, tx, txfarm, txford (in-process, saved to a file)', async (t) => {
  // rpc: five durable calls through a node.
  const rpcPm = join(dir, 'rpc-w.pm');
  const node = await RpcNode.start({ pmPath: rpcPm, create: true, sizeBytes: 2 << 20, strategy: 'wflush', handlers: WORKLOAD_HANDLERS });
  const c = await RemoteRpcClient.connect({ port: node.address().port, name: 'w' });
  for (let i = 1; i <= 5; i++) await c.rpc.call(WORKLOAD_METHOD, workloadPayload(seed, c.clientId, i)).result;
  c.close();
  await node.close();
  const rpc = inspectUnchanged(t, rpcPm);
  t.match(rpc, { app: 'rpc', problems: [], appCounter: '5' });
  t.equal(rpc.connections?.length, 1, 'the client is in the connection table');

  // kv: 20 keys through a node.
  const kvPm = join(dir, 'kv-w.pm');
  const kvNode = await NodeHost.start<KvAppServer>({ app: 'kv', pmPath: kvPm, create: true, sizeBytes: 2 << 20 });
  const { link, welcome } = await TcpLink.connect({ host: '127.0.0.1', port: kvNode.address().port, hello: new Uint8Array(0), name: 'w', clock: systemClock, authToken: undefined });
  const kv = await connectKvClient(new QueuePair(link), welcome);
  for (let i = 0; i < 20; i++) await kv.put(`key-${i}`, te.encode(`v${i}`));
  kv.qp.close();
  await kvNode.close();
  const kvr = inspectUnchanged(t, kvPm);
  t.match(kvr, { app: 'kv', system: 'prism', problems: [] });
  t.equal(kvr.recovered?.items, 20, 'kv: the 20 items are reachable after the dry run');

  // rs: three replicas in-process; replica 0 saved.
  const rs = RsLocalCluster.start({ replicas: 3, app: { layout: { blocks: 8 } }, seed });
  const w = rs.client({ writerId: 1 });
  for (let b = 0; b < 4; b++) await w.write(b, te.encode(`block ${b}`));
  const rsPm = saveRegion(rs.server(0).region, 'rs-w');
  await rs.close();
  const rsr = inspectUnchanged(t, rsPm);
  t.match(rsr, { app: 'rs', problems: [] });
  t.equal(rsr.recovered?.written, 4, 'rs: the 4 blocks written');

  // tx, txfarm, txford: one shard in-process, three committed transactions; the shard saved.
  for (const [system, app] of [['prism-tx', 'tx'], ['farm', 'txfarm'], ['ford', 'txford']] as Array<[TxSystemName, string]>) {
    const { app: a, options } = txSystemApp(system, { shards: 1, keysPerShard: 8, clients: 4, value: 'balance', initialBalance: 100, items: 64 });
    const shards = startLocalShards<object, AppServer>(a, 1, options, { nic: { drain: 'eager' }, seed });
    const cl = txClientApi(system, (s) => shards.connect(s), 0, { clock: systemClock });
    for (let i = 0; i < 3; i++) {
      await cl.begin();
      await cl.read(i, true);
      await cl.write(i, new Uint8Array(8).fill(i + 1));
      t.match(await cl.commit(), { status: 'committed' }, `${app}: transaction ${i} commits`);
    }
    shards.close();
    const pm = saveRegion(shards.regions[0]!, `${app}-w`);
    const r = inspectUnchanged(t, pm);
    t.match(r, { app, problems: [] }, `${app}: written file is sound`);
  }
});

t.test('a damaged rpc file: inspect shows header and layout, check fails with the coded problem, the file untouched', async (t) => {
  const pm = join(dir, 'rpc-bad.pm');
  writeFileSync(pm, readFileSync(await freshFile('rpc', 'rpc-fresh')));
  const f = readFileSync(pm);
  // 64 bytes of the connection table (offset 128 of the layout) flipped.
  for (let i = 0; i < 64; i++) f[HEADER_BYTES + 128 + i] ^= 0xff;
  writeFileSync(pm, f);
  const r = inspectUnchanged(t, pm);
  t.equal(r.app, 'rpc');
  t.match(r.header, { sizeBytes: 4 << 20 });
  t.match(r.layout, { maxClients: 64, connTableOffset: 128 }, 'the layout, from the superblock');
  t.equal(r.problems[0]?.code, 'PMRPC_ERR_TABLE_CORRUPT');
  t.notOk(checkFile(pm).ok);

  const before = sha(pm);
  const human = spawnSync(process.execPath, [MAIN, 'check', pm], { encoding: 'utf8' });
  t.equal(human.status, 1, 'check exits non-zero');
  t.match(human.stdout, /app rpc .*1 problem\n\s+PMRPC_ERR_TABLE_CORRUPT \[open\] connection slot 0/);
  t.match(human.stderr, /PMRPC_ERR_CHECK_FAILED/);
  t.match(formatInspect(r), /holds:\s+app rpc[\s\S]*layout:\s+baseOffset 0, maxClients 64[\s\S]*PMRPC_ERR_TABLE_CORRUPT \[open\]/, 'inspect shows header, layout and the problem');
  t.match(formatCheck(checkFile(pm)), /1 problem\n\s+PMRPC_ERR_TABLE_CORRUPT/);
  t.equal(sha(pm), before, 'the CLI did not modify the file');
});

t.test('the CLI on sound files: inspect --json names the app, check exits 0; the human lines', async (t) => {
  const j = spawnSync(process.execPath, [MAIN, 'inspect', join(dir, 'kv.pm'), '--json'], { encoding: 'utf8' });
  t.equal(j.status, 0, j.stderr);
  t.match(JSON.parse(j.stdout), { app: 'kv', system: 'prism', problems: [] });
  const c = spawnSync(process.execPath, [MAIN, 'check', join(dir, 'tx.pm'), '--json'], { encoding: 'utf8' });
  t.equal(c.status, 0, c.stderr);
  t.match(JSON.parse(c.stdout), { app: 'tx', ok: true, problems: [] });
  for (const app of APPS) t.match(formatCheck(checkFile(join(dir, `${app}.pm`))), new RegExp(`^pmrpc check .*: app ${app} .*: ok`), `${app}: check's line`);
  t.match(formatInspect(inspectFile(join(dir, 'kv.pm'))), /holds:\s+app kv \(PRISM-KV\)[\s\S]*layout:\s+system prism[\s\S]*audit:\s+sound/);
});

t.test('damage the dry run meets or that breaks a header: coded problems, the rest still shown', async (t) => {
  // A region with no app area: PMRPC_ERR_NO_APP.
  const empty = join(dir, 'empty.pm');
  const region = PmemRegion.createInMemory(1 << 20, { entropy: seededEntropy(createPrng(seed)) });
  writeFileSync(empty, materialize(region.crashState(), [...crashImages(region.crashState(), { engine: 'none' })][0]!));
  const e = inspectFile(empty);
  t.match(e, { app: null, area: { magic: '0x0000000000000000' }, problems: [{ code: InspectErrorCodes.NO_APP, step: 'area' }] });
  t.match(e.header, { sizeBytes: 1 << 20 });

  // An rs header with a valid checksum over an impossible geometry: PMRPC_ERR_AREA_UNREADABLE at the layout step.
  const pm = join(dir, 'rs-bad.pm');
  const f = readFileSync(join(dir, 'rs.pm'));
  const dv = new DataView(f.buffer, f.byteOffset + HEADER_BYTES, 128);
  dv.setUint32(12, 0, true); // blocks 0
  dv.setUint32(124, crc32c(f.subarray(HEADER_BYTES, HEADER_BYTES + 124)), true);
  writeFileSync(pm, f);
  const r = inspectFile(pm);
  t.match(r, { app: 'rs', layout: undefined, problems: [{ code: InspectErrorCodes.AREA_UNREADABLE, step: 'layout' }] });

  // A tx header that fails its checksum: the tx app's own code, the area still named.
  const tpm = join(dir, 'tx-bad.pm');
  const tf = readFileSync(join(dir, 'tx.pm'));
  tf[HEADER_BYTES + 20] ^= 1;
  writeFileSync(tpm, tf);
  t.match(inspectFile(tpm), { app: 'tx', problems: [{ code: 'PMRPC_ERR_TX_NOT_FORMATTED', step: 'layout' }] });

  // A PRISM-TX shard whose record says PREPARED over a torn body: the audit after the dry run.
  const { app: a, options } = txSystemApp('prism-tx', { shards: 1, keysPerShard: 8, clients: 4, value: 'balance', initialBalance: 100, items: 64 });
  const shards = startLocalShards<object, AppServer>(a, 1, options, { nic: { drain: 'eager' }, seed });
  shards.close();
  const rpm = saveRegion(shards.regions[0]!, 'tx-lock');
  const rf = readFileSync(rpm);
  const g = inspectFile(rpm).layout as { slotsOffset: number };
  // Key 0's slot points outside the arena: the audit's slot check after the dry run.
  new DataView(rf.buffer, rf.byteOffset + HEADER_BYTES + g.slotsOffset).setBigUint64(24, 64n, true);
  writeFileSync(rpm, rf);
  const lr = inspectFile(rpm);
  t.equal(lr.app, 'tx');
  t.ok(lr.problems.length > 0, `a slot pointing outside the arena is found: ${lr.problems.map((p) => `${p.code} ${p.message}`).join('; ')}`);
});

t.test('an app opened or formatted on another app\'s file names the app the file holds', async (t) => {
  await t.rejects(NodeHost.start({ app: 'kv', pmPath: join(dir, 'rs.pm') }), { code: AppErrorCodes.WRONG_APP, message: /holds app rs \(a PRISM-RS replica\)/ });
  await t.rejects(NodeHost.start({ app: 'rpc', pmPath: join(dir, 'kv.pm') }), { code: AppErrorCodes.WRONG_APP, message: /holds app kv \(PRISM-KV\).*not app rpc/ });
  await t.rejects(NodeHost.start({ app: 'tx', pmPath: join(dir, 'txford.pm') }), { code: AppErrorCodes.WRONG_APP, message: /holds app txford/ });
  await t.rejects(NodeHost.start({ app: 'txfarm', pmPath: join(dir, 'txford.pm') }), { code: AppErrorCodes.WRONG_APP, message: /holds app txford/ });
  await t.rejects(NodeHost.start({ app: 'rslock', pmPath: join(dir, 'tx.pm') }), { code: AppErrorCodes.WRONG_APP, message: /holds app tx / });
  await t.rejects(NodeHost.start({ app: 'rs', pmPath: join(dir, 'rpc.pm') }), { code: AppErrorCodes.WRONG_APP, message: /holds app rpc/ });
  await t.rejects(NodeHost.start({ app: 'kv', pmPath: join(dir, 'pilaf.pm') }), { code: AppErrorCodes.WRONG_APP, message: /holds app kv --system pilaf/ });
  await t.rejects(NodeHost.start({ app: 'txford', pmPath: join(dir, 'rslock.pm') }), { code: AppErrorCodes.WRONG_APP, message: /holds app rslock/ });
  // Format refuses another app's area (it used to overwrite it: a kv format read an rs header as "not formatted").
  const region = PmemRegion.createInMemory(4 << 20, { entropy: seededEntropy(createPrng(seed)) });
  rsApp.format(region, rsApp.resolveOptions({}));
  t.throws(() => kvApp.format(region, kvApp.resolveOptions({})), { code: AppErrorCodes.WRONG_APP });
  t.throws(() => rpcApp.format(region, rpcApp.resolveOptions({})), { code: AppErrorCodes.WRONG_APP });
  t.throws(() => txApp.format(region, txApp.resolveOptions({})), { code: AppErrorCodes.WRONG_APP });
  t.throws(() => txfarmApp.format(region, txfarmApp.resolveOptions({})), { code: AppErrorCodes.WRONG_APP });
  t.throws(() => txfordApp.format(region, txfordApp.resolveOptions({})), { code: AppErrorCodes.WRONG_APP });
  t.match(identifyArea(region.load(0, 16)), { app: 'rs' }, 'the rs area is intact');
  // A never-formatted area keeps each app's own code.
  const blank = PmemRegion.createInMemory(4 << 20);
  t.equal(identifyArea(blank.load(0, 16)), undefined);
});
