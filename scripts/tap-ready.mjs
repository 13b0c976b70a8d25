#!/usr/bin/env node
// After `npm ci` / `npm install` (npm's prepare: so that a test file run alone with `npx tap FILE`,
// as every seeded test prints for its replay, starts the fast way too) and before `tap` runs (npm's
// pretest / pretest:deep): tap builds its Test class for the plugin list
// in package.json's "tap" section. `npm ci` installs it built for tap's default plugins, which
// include @tapjs/typescript (ts-node in every test process); this project removes that plugin and
// loads TypeScript with tsx instead ("node-arg": ["--import=tsx"]). tap notices the difference and
// rebuilds on its next run, but that run still starts its test processes with the loaders it was
// started with (ts-node as well as tsx: the slow way). So rebuild here, before tap starts, when the
// built plugin signature is not the configured one; otherwise do nothing. `--check`: only say
// whether it is built for them (exit 1 if not; .ci/run checks it right after `npm ci`).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// (TapConfig parses process.argv as tap's own, read when it loads: it must not see this script's flag.)
const check = process.argv.includes('--check');
process.argv = process.argv.filter((a) => a !== '--check');
// Without tap (an install that omits the dev dependencies) there is nothing to build.
const tap = await Promise.all([import('@tapjs/config'), import('@tapjs/test')]).catch(() => undefined);
if (tap === undefined) process.exit(0);
const [{ TapConfig }, { signature }] = tap;
const config = await TapConfig.load();
if (check) {
  if (signature === config.pluginSignature) process.exit(0);
  console.error('tap is not built for package.json "tap.plugin" (npm\'s prepare runs scripts/tap-ready.mjs): a test file run alone with `npx tap FILE` would start with ts-node');
  process.exit(1);
}
if (signature !== config.pluginSignature) {
  console.log('tap: its plugins differ from package.json "tap.plugin": tap build');
  const tapBin = fileURLToPath(new URL('../node_modules/.bin/tap', import.meta.url));
  const r = spawnSync(tapBin, ['build'], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
