// The real-crash harnesses' options: every invalid one refused with its exact message (DESIGN §10).
import t from 'tap';
import { REAL_CRASH_DEFAULTS, resolveKvRealCrashOptions, resolveRealCrashOptions } from '../../src/server/index.js';
import { RS_REAL_CRASH, RS_REAL_CRASH_DEFAULTS, TX_REAL_CRASH } from '../../src/cluster/index.js';

const mainScript = 'dist/cli/main.js';

t.test('RPC real-crash options', async (t) => {
  t.equal(resolveRealCrashOptions({ mainScript, clients: undefined }).clients, REAL_CRASH_DEFAULTS.clients, 'undefined takes the default');
  t.throws(() => resolveRealCrashOptions(null as never), new TypeError('options must be an object, got null'));
  t.throws(() => resolveRealCrashOptions({ mainScript, strategy: 'tflush' as never }), TypeError);
  t.throws(() => resolveRealCrashOptions({ mainScript, strategy: 'none' }), new TypeError('strategy none never makes a request durable: nothing to verify'));
  t.throws(() => resolveRealCrashOptions({ mainScript, clients: 65 }), new RangeError('clients must be an integer in [1, 64], got 65'));
  t.throws(() => resolveRealCrashOptions({ mainScript, window: 0 }), new RangeError('window must be an integer in [1, 1024], got 0'));
  t.throws(() => resolveRealCrashOptions({ mainScript, seed: 2 ** 32 }), new RangeError('seed must be an integer in [-2147483648, 4294967295], got 4294967296'));
  t.throws(() => resolveRealCrashOptions({ mainScript, seconds: 0 }), new RangeError('seconds must be in (0, 3600], got 0'));
  t.throws(() => resolveRealCrashOptions({ mainScript, selfKillEvents: [5, 2] }), new RangeError('selfKillEvents must be [lo, hi] with 1 <= lo <= hi, got 5,2'));
  t.throws(() => resolveRealCrashOptions({ mainScript, ackKills: -1 }), new RangeError('ackKills must be an integer in [0, 100], got -1'));
  t.throws(() => resolveRealCrashOptions({ mainScript, ackKillCompletions: [0, 10] }), new RangeError('ackKillCompletions must be [lo, hi] with 1 <= lo <= hi, got 0,10'));
  t.throws(() => resolveRealCrashOptions({ mainScript, mortalClients: 17 }), new RangeError('mortalClients must be an integer in [0, 16], got 17'));
  t.throws(() => resolveRealCrashOptions({ mainScript, clients: 50, mortalClients: 11 }), new RangeError('clients + mortalClients must be at most 60, got 61'));
  t.equal(resolveRealCrashOptions({ mainScript }).ackKills, 1, 'one acknowledgement kill by default');
  t.equal(resolveRealCrashOptions({ mainScript }).mortalClients, 1, 'one client dies with the server by default');
});

t.test('KV real-crash options', async (t) => {
  t.throws(() => resolveKvRealCrashOptions({ mainScript, nodes: 17 }), new RangeError('nodes must be an integer in [1, 16], got 17'));
  t.throws(() => resolveKvRealCrashOptions({ mainScript, putsBeforeKill: -1 }), new RangeError('putsBeforeKill must be an integer in [0, 10000], got -1'));
  t.throws(() => resolveKvRealCrashOptions({ mainScript, seconds: 3601 }), new RangeError('seconds must be in (0, 3600], got 3601'));
  t.throws(() => resolveKvRealCrashOptions({ mainScript, system: 'redis' as never }), new TypeError("system must be 'prism' or 'pilaf', got redis"));
});

t.test('RS and TX real-crash options (their registry entries resolve them)', async (t) => {
  t.equal(RS_REAL_CRASH.resolveOptions({ mainScript }).kills, RS_REAL_CRASH_DEFAULTS.kills, 'the default kills');
  t.throws(() => RS_REAL_CRASH.resolveOptions({ mainScript, kills: -1 }), new RangeError('kills must be an integer in [0, 1000], got -1'));
  t.throws(() => RS_REAL_CRASH.resolveOptions({ mainScript, blocks: 0 }), new RangeError('blocks must be an integer in [1, 64], got 0'));
  t.throws(() => RS_REAL_CRASH.resolveOptions({ mainScript, clients: 9 }), new RangeError('clients must be an integer in [1, 8], got 9'));
  t.throws(() => TX_REAL_CRASH.resolveOptions({ mainScript, shards: 9 }), new RangeError('shards must be an integer in [1, 8], got 9'));
  t.throws(() => TX_REAL_CRASH.resolveOptions({ mainScript, leaseMs: 5 }), new RangeError('leaseMs must be an integer in [10, 60000], got 5'));
});
