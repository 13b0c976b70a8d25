// Layout options (issue 25): kvSlots, kvProbeSlots, kvClasses, rsBlocks, txItems — as cluster-file
// node options and as `pmrpc serve` flags (cli/layout-flags.ts), one check (layoutAppOptions), coded
// errors; a new file gets the layout, an existing file keeps its own.
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PmemRegion } from '../../pmem/index.js';
import { decodeKvHeader } from '../../src/apps/kv/index.js';
import { decodeRsHeader } from '../../src/apps/rs/index.js';
import { LayoutErrorCodes, layoutAppOptions, parseClusterSpec } from '../../src/cluster/index.js';
import { layoutAppOptions as flagAppOptions, layoutFlagArgs } from '../../cli/layout-flags.js';
import { serveArgs } from '../../cli/cluster.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const code = (c: string): { code: string } => ({ code: c });
const dir = mkdtempSync(join(tmpdir(), 'pmrpc-layout-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const spec = (app: string, options: Record<string, unknown>): unknown => ({ version: 1, nodes: [{ id: 'a', app, port: 7001, pm: '/tmp/a.pm', options }] });

t.test('cluster file: layout options of the node\'s app, checked by the app\'s rules', async (t) => {
  const ok = parseClusterSpec(spec('kv', { kvSlots: 2048, kvProbeSlots: 16, kvClasses: [{ sizeBytes: 64, count: 100 }, { sizeBytes: 256, count: 10 }] }));
  t.same(ok.nodes[0]!.options.kvClasses, [{ sizeBytes: 64, count: 100 }, { sizeBytes: 256, count: 10 }]);
  t.same(serveArgs(ok.nodes[0]!, undefined).slice(-6), ['--kv-slots', '2048', '--kv-probe-slots', '16', '--kv-classes', '64:100,256:10'], 'cluster up passes them to serve');
  t.equal(parseClusterSpec(spec('rs', { rsBlocks: 1000 })).nodes[0]!.options.rsBlocks, 1000);
  t.throws(() => parseClusterSpec(spec('rs', { kvSlots: 64 })), code(LayoutErrorCodes.LAYOUT_WRONG_APP));
  t.throws(() => parseClusterSpec(spec('kv', { txItems: 64 })), code(LayoutErrorCodes.LAYOUT_WRONG_APP));
  t.throws(() => parseClusterSpec(spec('kv', { kvSlots: 1 << 25 })), { code: LayoutErrorCodes.BAD_LAYOUT, message: /nodes\[0\]\.options\.kvSlots must be an integer in \[1, 2\^24\]/ });
  t.throws(() => parseClusterSpec(spec('kv', { kvProbeSlots: 257 })), code(LayoutErrorCodes.BAD_LAYOUT));
  t.equal(parseClusterSpec(spec('kv', { kvProbeSlots: 256 })).nodes[0]!.options.kvProbeSlots, 256, 'up to 256 (64 groups of 4)');
  t.throws(() => parseClusterSpec(spec('kv', { kvClasses: [{ sizeBytes: 100, count: 1 }] })), code(LayoutErrorCodes.BAD_LAYOUT));
  t.throws(() => parseClusterSpec(spec('kv', { kvClasses: [{ size: 64 }] })), code('PMRPC_ERR_CLUSTER_BAD_FIELD'));
  t.throws(() => parseClusterSpec(spec('tx', { keysPerShard: 20, txItems: 10 })), code(LayoutErrorCodes.BAD_LAYOUT), 'fewer items than keys');
  t.throws(() => parseClusterSpec(spec('rs', { rsBlocks: 0 })), code('PMRPC_ERR_CLUSTER_BAD_FIELD'));
  t.same(layoutAppOptions('rs', { rsBlocks: 9 }), { layout: { blocks: 9 } });
  t.same(layoutAppOptions('tx', { txItems: 300 }), { items: 300 });
  t.same(layoutAppOptions('rpc', {}), {});
  t.same(layoutFlagArgs({ rsBlocks: 9, txItems: 3 }), ['--rs-blocks', '9', '--tx-items', '3']);
});

t.test('flags: coded errors name the flag; through serve, nothing is created', async (t) => {
  const cases: Array<[string, Record<string, string>, string, RegExp]> = [
    ['rs', { kvSlots: '64' }, 'PMRPC_ERR_LAYOUT_WRONG_APP', /--kv-slots is a layout option of the kv app, not of rs/],
    ['kv', { txItems: '64' }, 'PMRPC_ERR_LAYOUT_WRONG_APP', /--tx-items/],
    ['kv', { kvProbeSlots: '257' }, 'PMRPC_ERR_BAD_LAYOUT', /--kv-probe-slots must be an integer in \[1, 256\]/],
    ['kv', { kvProbeSlots: 'x' }, 'PMRPC_ERR_BAD_LAYOUT', /--kv-probe-slots must be a positive integer/],
    ['kv', { kvSlots: '-3' }, 'PMRPC_ERR_BAD_LAYOUT', /--kv-slots must be a positive integer/],
    ['kv', { kvClasses: '64:10,64:3' }, 'PMRPC_ERR_BAD_LAYOUT', /increasing/],
    ['kv', { kvClasses: '64' }, 'PMRPC_ERR_BAD_LAYOUT', /SIZE:COUNT/],
    ['rs', { rsBlocks: '0' }, 'PMRPC_ERR_BAD_LAYOUT', /--rs-blocks/],
    ['tx', { txItems: '3' }, 'PMRPC_ERR_BAD_LAYOUT', /--tx-items must be an integer in \[keysPerShard/],
  ];
  for (const [app, flags, c, msg] of cases) t.throws(() => flagAppOptions(app, flags), { code: c, message: msg }, `${app} ${JSON.stringify(flags)}`);
  t.same(flagAppOptions('tx', { txItems: '5000' }), { items: 5000 });
  t.same(flagAppOptions('rs', { rsBlocks: '1000' }), { layout: { blocks: 1000 } });
  // Through the command (two spawns: a loaded machine starts node slowly).
  const pm = join(dir, 'bad.pm');
  for (const [args, re] of [
    [['--app', 'rs', '--kv-slots', '64'], /PMRPC_ERR_LAYOUT_WRONG_APP: --kv-slots is a layout option of the kv app, not of rs/],
    [['--app', 'kv', '--kv-slots', '65536', '--size', '1M'], /PMRPC_ERR_SIZE_TOO_SMALL: the kv app needs at least/],
  ] as Array<[string[], RegExp]>) {
    const r = spawnSync(process.execPath, [CLI, 'serve', '--create', '--pm', pm, '--json', ...args], { encoding: 'utf8', timeout: 240_000 });
    t.equal(r.status, 1, args.join(' '));
    t.match(r.stderr, re, args.join(' '));
  }
  t.notOk(existsSync(pm), 'no file was created');
});

/** Starts serve, waits for its start line, stops it with SIGTERM. */
async function serveOnce(args: string[]): Promise<Record<string, unknown>> {
  const p = spawn(process.execPath, [CLI, 'serve', '--create', '--port', '0', '--json', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  p.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const line = await new Promise<string>((resolve, reject) => {
    p.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    p.on('exit', (c) => reject(new Error(`serve exited ${String(c)} before listening: ${err}`)));
  });
  const exited = new Promise<number | null>((resolve) => p.on('exit', (c) => resolve(c)));
  p.kill('SIGTERM');
  t.equal(await exited, 0, 'serve stops in order');
  return JSON.parse(line) as Record<string, unknown>;
}

t.test('serve --kv-slots / --kv-probe-slots / --kv-classes format a new file with them; an existing file keeps its own', async (t) => {
  const pm = join(dir, 'kv.pm');
  await serveOnce(['--pm', pm, '--app', 'kv', '--size', '4M', '--kv-slots', '4096', '--kv-probe-slots', '8', '--kv-classes', '64:4096,256:512']);
  const read = (): ReturnType<typeof decodeKvHeader> => {
    const r = PmemRegion.open(pm);
    try {
      return decodeKvHeader(r.load(0, 128), 0);
    } finally {
      r.close();
    }
  };
  const g = read();
  t.same([g.slotCount, g.probeSlots, g.classes.map((c) => `${c.sizeBytes}:${c.count}`)], [4096, 8, ['64:4096', '256:512']]);
  await serveOnce(['--pm', pm, '--app', 'kv', '--size', '4M', '--kv-slots', '64']);
  t.equal(read().slotCount, 4096, 'an existing file keeps its layout');
});

t.test('format takes the same layout flags as serve --create', async (t) => {
  const pm = join(dir, 'kv-format.pm');
  const r = spawnSync(process.execPath, [CLI, 'format', pm, '--app', 'kv', '--size', '4M', '--kv-slots', '2048', '--kv-probe-slots', '8', '--json'], { encoding: 'utf8', timeout: 240_000 });
  t.equal(r.status, 0, r.stderr);
  const region = PmemRegion.open(pm);
  try {
    const g = decodeKvHeader(region.load(0, 128), 0);
    t.same([g.slotCount, g.probeSlots], [2048, 8], 'the file holds the layout the flags gave');
  } finally {
    region.close();
  }
  const bad = spawnSync(process.execPath, [CLI, 'format', join(dir, 'rs-format.pm'), '--app', 'rs', '--kv-slots', '64'], { encoding: 'utf8', timeout: 240_000 });
  t.equal(bad.status, 1);
  t.match(bad.stderr, /PMRPC_ERR_LAYOUT_WRONG_APP/);
  t.notOk(existsSync(join(dir, 'rs-format.pm')), 'no file was created');
});

t.test('serve --rs-blocks', async (t) => {
  const rs = join(dir, 'rs.pm');
  await serveOnce(['--pm', rs, '--app', 'rs', '--size', '8M', '--rs-blocks', '1000']);
  const r = PmemRegion.open(rs);
  t.equal(decodeRsHeader(r.load(0, 128), 0).blocks, 1000);
  r.close();
});
