/** bench redis (issue 29): redis-benchmark's CSV parsed from recorded samples, and the skip path without Redis (no Redis needed). */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { findOnPath, parseRedisBenchmarkCsv, REDIS_QUICK, REDIS_SKIP_NOTE, runRedisBench } from '../../bench/redis.js';

const dir = mkdtempSync(join(tmpdir(), 'pmrpc-bench-redis-test-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

// Recorded: redis-benchmark 7.0.15 (Debian 12) -c 2 -P 32 -t set -d 48 -n 20000 -r 100000 --csv, appendfsync no.
const REDIS7 = `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"SET","163934.42","0.361","0.112","0.343","0.503","0.695","3.255"
`;
// Redis 6's --csv: no header, test and rps only.
const REDIS6 = `"SET","98765.43"\n"GET","123456.00"\n`;

t.test('parses Redis 7 CSV: rps and latencies by header name', async (t) => {
  t.same(parseRedisBenchmarkCsv(REDIS7), [{ test: 'SET', rps: 163934.42, avgLatencyMs: 0.361, p50LatencyMs: 0.343, p99LatencyMs: 0.695 }]);
});

t.test('parses Redis 6 CSV (no header, no latencies) and CRLF line ends', async (t) => {
  t.same(parseRedisBenchmarkCsv(REDIS6.replace(/\n/g, '\r\n')), [{ test: 'SET', rps: 98765.43 }, { test: 'GET', rps: 123456 }]);
});

t.test('output without a result line is a coded error', async (t) => {
  for (const bad of ['', 'Could not connect to Redis at 127.0.0.1:1: Connection refused\n', '"test","rps"\n"SET","n/a"\n']) {
    t.throws(() => parseRedisBenchmarkCsv(bad), { code: 'PMRPC_ERR_REDIS_BENCH_FAILED' }, JSON.stringify(bad));
  }
});

t.test('findOnPath finds an executable and ignores a plain file', async (t) => {
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'redis-benchmark'), '#!/bin/sh\n');
  chmodSync(join(bin, 'redis-benchmark'), 0o755);
  writeFileSync(join(bin, 'redis-server'), 'not executable');
  t.equal(findOnPath('redis-benchmark', `/nonexistent:${bin}`), join(bin, 'redis-benchmark'));
  t.equal(findOnPath('redis-server', bin), undefined);
  t.equal(findOnPath('redis-server', undefined), undefined);
});

t.test('without redis-server and redis-benchmark on PATH the suite is skipped with a note', async (t) => {
  const labels: string[] = [];
  const r = await runRedisBench({ quick: true, seed: 1, progress: (_d, _t, l) => labels.push(l) }, REDIS_QUICK, { PATH: join(dir, 'empty') });
  t.equal(r.suite, 'redis');
  t.same(r.rows, []);
  t.same(r.ratios, {});
  t.equal(r.config.skipped, true);
  t.equal(r.config.note, REDIS_SKIP_NOTE);
  t.match(r.summary.join('\n'), /skipped: redis-server and redis-benchmark/);
  t.same(labels, ['skipped']);
});
