/**
 * The benchmarks' server children: a compiled bench module run as a child process, which prints
 * one JSON line once it listens (bench kv's kv-server.js, bench rs's rs-server.js).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** dist/bench/<name>, from the .ts (tsx) or the compiled .js of this module. */
export function benchDistFile(name: string): string {
  const here = fileURLToPath(import.meta.url);
  const dir = here.endsWith('.ts') ? join(dirname(here), '..', 'dist', 'bench') : dirname(here);
  const file = join(dir, name);
  if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build:ts first`);
  return file;
}

/** In a bench child: exit when the parent goes (pmem/runtime.ts). */
export { exitWithParent } from '../pmem/index.js';

/** The one-line equivalent of exitWithParent for an inline `node -e` child. */
export const EXIT_WITH_PARENT_JS = "process.stdin.on('end', () => process.exit(0)).on('error', () => process.exit(0)).resume();";

/**
 * Starts `node <file> <arg>`; resolves with its first stdout line (parsed JSON) once it listens,
 * and `stop` (SIGTERM, SIGKILL after 5 s). `what` names it in errors.
 */
export async function startServerChild<T>(file: string, arg: string, what: string, startMs = 120_000): Promise<{ ready: T; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [file, arg], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(t);
  };
  try {
    const line = await new Promise<string>((resolve, reject) => {
      const rl = createInterface({ input: child.stdout! });
      const timer = setTimeout(() => reject(new Error(`${what} did not start within ${startMs / 1000} s`)), startMs);
      rl.once('line', (l) => {
        clearTimeout(timer);
        rl.close();
        resolve(l);
      });
      child.once('exit', (code) => reject(new Error(`${what} exited (${String(code)}) before listening`)));
    });
    return { ready: JSON.parse(line) as T, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
