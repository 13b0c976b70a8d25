#!/usr/bin/env node
// Before `tap` runs (npm's pretest / pretest:deep): tap builds its Test class for the plugin list
// in package.json's "tap" section. `npm ci` installs it built for tap's default plugins, which
// include @tapjs/typescript (ts-node in every test process); this project removes that plugin and
// loads TypeScript with tsx instead ("node-arg": ["--import=tsx"]). tap notices the difference and
// rebuilds on its next run, but that run still starts its test processes with the loaders it was
// started with (ts-node as well as tsx: the slow way). So rebuild here, before tap starts, when the
// built plugin signature is not the configured one; otherwise do nothing.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { TapConfig } from '@tapjs/config';
import { signature } from '@tapjs/test';

const config = await TapConfig.load();
if (signature !== config.pluginSignature) {
  console.log('tap: its plugins differ from package.json "tap.plugin": tap build');
  const tapBin = fileURLToPath(new URL('../node_modules/.bin/tap', import.meta.url));
  const r = spawnSync(tapBin, ['build'], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
