// One way for a test to run a real `pmrpc serve` child: spawn it, wait (bounded) for its JSON start
// line, kill it with SIGKILL at teardown if it still runs. Used by the tests that need a process
// boundary (a SIGTERM, stderr lines, the metrics port).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

export interface ServeChild {
  child: ChildProcess;
  /** The start line, parsed. */
  start: Record<string, unknown> & { port: number };
  /** Everything the child wrote on stderr so far. */
  stderr: () => string;
  /** The exit code (null: killed by a signal). */
  exited: Promise<number | null>;
}

/** Spawns `pmrpc serve ARGS` and resolves with its start line; rejects if it exits first or prints nothing within `timeoutMs` (a bound, not a speed claim). */
export async function spawnServe(t: Tap.Test, args: string[], timeoutMs = 120_000): Promise<ServeChild> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) first`);
  const child = spawn(process.execPath, [MAIN, 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  const line = await new Promise<string>((res, rej) => {
    let buf = '';
    const timer = setTimeout(() => rej(new Error(`serve printed nothing in ${timeoutMs} ms; stderr: ${stderr}`)), timeoutMs);
    child.stdout!.on('data', (c: Buffer) => {
      buf += c.toString();
      const nl = buf.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        res(buf.slice(0, nl));
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      rej(new Error(`serve exited (${code}) before listening; stderr: ${stderr}`));
    });
  });
  return { child, start: JSON.parse(line) as ServeChild['start'], stderr: () => stderr, exited };
}
