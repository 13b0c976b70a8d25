#!/usr/bin/env node
// Invariant checks per 1,000 lines, by area (DESIGN §10.1): call sites of `invariant(` (pmem/errors.ts),
// comments and the definition excluded, over the area's .ts lines (wc -l). Run from the repository root;
// an area is a directory or a file (arguments override the default list). Feeds docs/design.md §10.1.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const AREAS = process.argv.length > 2 ? process.argv.slice(2) : [
  'pmem', 'flush', 'recovery', 'recovery/ring.ts', 'recovery/redo-log.ts', 'src/rpc',
  'src/apps/kv', 'src/apps/pilaf', 'src/apps/rs', 'src/apps/rslock', 'src/apps/register',
  'src/apps/shared', 'src/apps/tx',
];

function files(dir) {
  if (!statSync(dir).isDirectory()) return [dir];
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) return files(p);
    return p.endsWith('.ts') && !p.endsWith('.d.ts') ? [p] : [];
  });
}

const CALL = /(^|[^\w.])invariant\(/;
console.log('| area | lines | checks | per 1,000 lines |');
console.log('|---|---:|---:|---:|');
for (const area of AREAS) {
  let lines = 0;
  let checks = 0;
  for (const f of files(area)) {
    const text = readFileSync(f, 'utf8').split('\n');
    lines += text.length - (text.at(-1) === '' ? 1 : 0);
    for (const l of text) {
      const t = l.trim();
      if (t.startsWith('//') || t.startsWith('*') || t.startsWith('/*')) continue;
      if (/function invariant\(/.test(t)) continue;
      const m = t.match(new RegExp(CALL.source, 'g'));
      if (m) checks += m.length;
    }
  }
  console.log(`| ${area}${area.endsWith('.ts') ? '' : '/'} | ${lines} | ${checks} | ${(checks * 1000 / lines).toFixed(1)} |`);
}
