// A PM file holds its whole size on disk (posix_fallocate at create, format and open): on a
// filesystem without room, `format`, `serve --create` and the open of an existing sparse file are
// refused with PMRPC_ERR_IO (ENOSPC) and exit 1 — never a SIGBUS at the store that would fill a
// hole, after acknowledging requests. The full filesystem is a 4 MiB tmpfs mounted in a private
// mount namespace (`unshare -rm`); where the kernel allows no such namespace the test says so.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatNodeFile } from '../../src/node/index.js';

const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) first`);

const dir = mkdtempSync(join(tmpdir(), 'pmrpc-reserve-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `script` (sh) with `mnt` a fresh 4 MiB tmpfs, in a private user and mount namespace. */
function inSmallFs(mnt: string, script: string): { status: number | null; signal: string | null; stdout: string; stderr: string } {
  const r = spawnSync('unshare', ['-rm', 'sh', '-c', `mount -t tmpfs -o size=4m pmrpc-test "${mnt}" && ${script}`], { encoding: 'utf8', timeout: 180_000 });
  return { status: r.status, signal: r.signal, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

const probe = mkdtempSync(join(dir, 'probe-'));
const can = inSmallFs(probe, 'true');
if (can.status !== 0) {
  t.test('a full filesystem', { skip: `no private mount namespace here (unshare -rm: ${can.stderr.trim() || `exit ${can.status}`}): the full-filesystem cases need one` }, () => {});
} else {
  t.test('a format or a serve --create larger than the free space is PMRPC_ERR_IO ENOSPC, exit 1, no file', async (t) => {
    const mnt = mkdtempSync(join(dir, 'mnt-'));
    // Each command bounded (without the reservation `serve --create` starts and serves: killed, it fails the test, no orphan left).
    const node = `timeout -s KILL 60 ${JSON.stringify(process.execPath)}`;
    const main = JSON.stringify(MAIN);
    const r = inSmallFs(
      mnt,
      [
        `${node} ${main} format "${mnt}/f.pm" --app rpc --size 8M; echo "format-exit=$?"; ls "${mnt}"`,
        `${node} ${main} serve --create --size 8M --pm "${mnt}/s.pm" --port 0; echo "serve-exit=$?"; ls "${mnt}"`,
      ].join('; '),
    );
    t.match(r.stdout, /format-exit=1\n/, `format: exit 1 (${r.signal ?? ''})`);
    t.match(r.stdout, /serve-exit=1\n/, `serve --create: exit 1`);
    t.notMatch(r.stdout, /\.pm/, 'no file is left (nor a temporary one)');
    t.match(r.stderr, /PMRPC_ERR_IO: cannot reserve \d+ bytes on disk for .*f\.pm \(ENOSPC\)/, 'format names the cause');
    t.match(r.stderr, /PMRPC_ERR_IO: cannot reserve \d+ bytes on disk for .*s\.pm \(ENOSPC\)/, 'serve names the cause');
    t.notMatch(r.stderr, /SIGBUS|Bus error/);
  });

  t.test('an existing sparse PM file larger than the free space: serve refuses it at open (ENOSPC, exit 1), the file untouched', async (t) => {
    // A valid 8 MiB rpc file, sparse (as formats before the reservation left it): its layout pages only.
    const src = join(dir, 'sparse.pm');
    formatNodeFile(src, 'rpc', {}, 8 * 2 ** 20);
    const sparse = join(dir, 'sparse-copy.pm');
    // The copy made sparse again (the format reserved every block): its zero blocks deallocated.
    copyFileSync(src, sparse);
    spawnSync('fallocate', ['--dig-holes', sparse]);
    const allocated = statSync(sparse).blocks * 512;
    t.ok(allocated < 4 * 2 ** 20, `the copy is sparse (${allocated} bytes allocated of ${statSync(sparse).size})`);
    const mnt = mkdtempSync(join(dir, 'mnt-'));
    const node = `timeout -s KILL 60 ${JSON.stringify(process.execPath)}`;
    const r = inSmallFs(mnt, `cp --sparse=always "${sparse}" "${mnt}/n.pm" && ${node} ${JSON.stringify(MAIN)} serve --pm "${mnt}/n.pm" --port 0; echo "serve-exit=$?"; cmp "${sparse}" "${mnt}/n.pm" && echo same`);
    t.match(r.stdout, /serve-exit=1\n/, `serve: exit 1 (${r.signal ?? ''}; stderr ${r.stderr.slice(0, 300)})`);
    t.match(r.stderr, /PMRPC_ERR_IO: cannot reserve \d+ bytes on disk for .*n\.pm \(ENOSPC\)/);
    t.match(r.stdout, /same\n/, 'the file reads as before');
  });
}
