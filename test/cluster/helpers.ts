// Helpers of the cluster tests: free loopback ports, the compiled CLI run asynchronously, teardown of node processes.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) first`);

/** `n` ports free on 127.0.0.1 right now (held together, then released). */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, () => new Promise<ReturnType<typeof createServer>>((res, rej) => {
      const s = createServer();
      s.once('error', rej);
      s.listen(0, '127.0.0.1', () => res(s));
    })),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `pmrpc ...args` (bounded: 120 s, then killed). */
export function cli(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<CliResult> {
  return new Promise((res) => {
    execFile(process.execPath, [MAIN, ...args], { env, timeout: 120_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 1;
      res({ code, stdout, stderr });
    });
  });
}

/** SIGKILLs every node process a state dir lists (a failed test leaves no orphan). */
export function killAll(stateDir: string): void {
  if (!existsSync(stateDir)) return;
  for (const f of readdirSync(stateDir).filter((x) => x.endsWith('.pid'))) {
    const pid = Number(readFileSync(join(stateDir, f), 'utf8').trim());
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}
