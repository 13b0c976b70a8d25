// Every registered error code is documented in docs/errors.md, and every code documented there is
// registered (DESIGN §10). Codes register at module load (defineErrorCodes), so loading the
// library's face loads every layer's codes.
import t from 'tap';
import { readFileSync } from 'node:fs';
import * as pmrpc from '../src/index.js';
// The apps and the testing tools are subpaths (pmrpc/apps/kv, pmrpc/testing), the bench a folder of its own.
import * as kv from '../src/apps/kv/index.js';
import '../src/apps/tx/index.js';
import * as rs from '../src/apps/rs/index.js';
import * as testing from '../src/testing/index.js';
import '../bench/sqlite.js';
import '../bench/redis.js';
import '../cli/cluster.js';
import { PmrpcError, registeredErrorCodes } from '../pmem/index.js';

const doc = readFileSync(new URL('../docs/errors.md', import.meta.url), 'utf8');
// Examples in fenced code blocks (an application's own codes) are not pmrpc's codes.
const prose = doc.replace(/```[\s\S]*?```/g, '');
const documented = new Set(prose.match(/PMRPC_ERR_[A-Z0-9_]+/g) ?? []);
const registered = registeredErrorCodes();

t.test('the registry holds every layer\'s codes', async (t) => {
  t.ok(registered.size >= 80, `${registered.size} codes registered`);
  for (const layer of ['pmem', 'flush', 'recovery', 'rpc', 'transport', 'server', 'kv', 'rs']) {
    t.ok([...registered.values()].some((l) => l.includes(layer)), `layer ${layer} registered codes`);
  }
  // Every exported *ErrorCodes object was made with defineErrorCodes (frozen, registered).
  const objects = [...Object.entries(pmrpc), ...Object.entries(kv), ...Object.entries(rs), ...Object.entries(testing)].filter(([name, v]) => name.endsWith('ErrorCodes') && typeof v === 'object');
  t.ok(objects.length >= 8, objects.map(([n]) => n).join(', '));
  for (const [name, codes] of objects) {
    t.ok(Object.isFrozen(codes), `${name} is frozen`);
    for (const code of Object.values(codes as Record<string, string>)) t.ok(registered.has(code), `${name}: ${code} is registered`);
  }
});

t.test('every registered code is in docs/errors.md', async (t) => {
  const missing = [...registered.keys()].filter((c) => !documented.has(c));
  t.same(missing, [], 'undocumented codes');
});

t.test('docs/errors.md names no code that is not registered', async (t) => {
  const unknown = [...documented].filter((c) => !registered.has(c));
  t.same(unknown, [], 'documented but not registered');
});

t.test('a code is checked at compile time', async (t) => {
  // @ts-expect-error a code nobody registered does not compile
  const e = new PmrpcError('PMRPC_ERR_NO_SUCH_CODE_ANYWHERE', 'typo');
  t.equal(e.code, 'PMRPC_ERR_NO_SUCH_CODE_ANYWHERE');
  t.equal(new PmrpcError(pmrpc.NicErrorCodes.BAD_RKEY, 'x').code, 'PMRPC_ERR_BAD_RKEY');
});
