// Helpers of the cluster tests: free loopback ports, the compiled CLI run asynchronously, teardown of node processes.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) first`);

export { freePorts } from '../../src/cluster/index.js';

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
