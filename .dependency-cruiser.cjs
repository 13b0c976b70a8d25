/**
 * dependency-cruiser rules for pmrpc: the layering of DESIGN §1, enforced.
 * Run by test/layering.test.ts (part of `npm test`) and by `npm run depcruise`.
 *
 *   cli → bench → src → recovery → flush → pmem → native
 *
 * (a) no import points up that list; (b) a module outside a folder that has an `index.ts`
 * imports that folder only through its `index.ts` (its face); (c) no cycle.
 */
'use strict';

const fs = require('node:fs');
const path = require('node:path');

/** The floors, bottom first. `native/` is C++ and is loaded by pmem/native.ts, not imported. */
const FLOORS = ['pmem', 'flush', 'recovery', 'src', 'bench', 'cli'];

/** Every folder under the floors that has an `index.ts` (its face), found on disk. */
function foldersWithIndex() {
  const found = [];
  const walk = (dir) => {
    if (fs.existsSync(path.join(__dirname, dir, 'index.ts'))) found.push(dir);
    for (const entry of fs.readdirSync(path.join(__dirname, dir), { withFileTypes: true })) {
      if (entry.isDirectory()) walk(`${dir}/${entry.name}`);
    }
  };
  for (const floor of FLOORS) if (fs.existsSync(path.join(__dirname, floor))) walk(floor);
  return found;
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** (a): one rule per floor — it may not import any floor above it. */
const upward = FLOORS.slice(0, -1).map((floor, i) => ({
  name: `layer-${floor}-imports-up`,
  comment: `${floor}/ is below ${FLOORS.slice(i + 1).join(', ')}: dependencies point downwards only (DESIGN §1)`,
  severity: 'error',
  from: { path: `^${floor}/` },
  to: { path: `^(${FLOORS.slice(i + 1).join('|')})/` },
}));

const faces = foldersWithIndex();

module.exports = {
  forbidden: [
    ...upward,
    {
      name: 'source-imports-test',
      comment: 'library, bench and cli code never imports from test/',
      severity: 'error',
      from: { path: `^(${FLOORS.join('|')})/` },
      to: { path: '^test/' },
    },
    {
      // (b) `$1` is the importing module's own folder: imports inside one folder are free.
      name: 'bypasses-index',
      comment: "imports a file inside another folder that has an index.ts; import that folder's index.ts (its face) instead",
      severity: 'error',
      from: { path: '^(.+)/[^/]+$', pathNot: `^(?!(${FLOORS.join('|')})/)` },
      to: {
        path: `^(${faces.map(escape).join('|')})/[^/]+$`,
        pathNot: ['^$1/[^/]+$', '/index\\.ts$'],
      },
    },
    {
      name: 'no-circular',
      comment: 'a cycle of imports (type-only imports count too)',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'an import that cannot be resolved (a typo, or a resolver misconfiguration that would hide the rules above)',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|build|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
      extensions: ['.ts', '.js', '.d.ts'],
    },
    reporterOptions: {
      text: { highlightFocused: false },
    },
  },
};
