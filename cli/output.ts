/**
 * Output conventions of the CLI: the human report on stdout (`> report.txt` keeps it), or one JSON
 * document there with --json; progress and logs on stderr. Exit status: 0 ok, 1 a finding or a
 * coded error, 2 an auth token needed (main.ts), 3 a --mutant run whose mutant was not caught,
 * 130 interrupted (SIGINT; the partial summary and the replay line are printed first).
 */
import cliProgress from 'cli-progress';
import { PmrpcError, defineErrorCodes, type ErrorCodesOf } from '../pmem/index.js';

export const CliErrorCodes = defineErrorCodes('cli', {
  /** An option's value is not one the command takes (a non-integer count, an unknown choice). */
  BAD_OPTION: 'PMRPC_ERR_BAD_OPTION',
  /** A `--mutant` run found no violation: the mutant was not caught (exit status 3). */
  MUTANT_NOT_CAUGHT: 'PMRPC_ERR_MUTANT_NOT_CAUGHT',
  /** `bench history` where no run was recorded (no, or no readable, <out>/history.sqlite). */
  NO_HISTORY: 'PMRPC_ERR_NO_HISTORY',
  /** `cluster status`: a node does not serve (exit status 1). */
  NODE_NOT_SERVING: 'PMRPC_ERR_NODE_NOT_SERVING',
});

declare module '../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof CliErrorCodes> {}
}

/** Exit status of a --mutant run whose mutant was not caught. */
export const EXIT_MUTANT_NOT_CAUGHT = 3;
/** Exit status after SIGINT (128 + 2, as shells report it). */
export const EXIT_INTERRUPTED = 130;

/** A bad option value, coded. */
export function badOption(message: string): PmrpcError {
  return new PmrpcError(CliErrorCodes.BAD_OPTION, message);
}

/**
 * Runs the option checks of a library call (a seed range, explorer or swarm options): their
 * TypeError / RangeError is a bad option to the user, so it becomes PMRPC_ERR_BAD_OPTION.
 */
export function checkOptions<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof TypeError || e instanceof RangeError) throw badOption(e.message);
    throw e;
  }
}

/** One line of the human report (stdout). */
export function report(line: string): void {
  process.stdout.write(`${line}\n`);
}

/**
 * While `run` runs, SIGINT prints `partial()` (the report so far and the replay line, on stdout)
 * and exits with EXIT_INTERRUPTED. The handler is removed when `run` settles. `header` (the report's
 * first line) is printed once the handler is in place: a caller that interrupts on seeing it never
 * meets the default SIGINT action.
 */
export async function onInterrupt<T>(partial: () => string[], run: () => Promise<T>, header?: string): Promise<T> {
  const handler = (): void => {
    for (const line of partial()) report(line);
    process.exit(EXIT_INTERRUPTED);
  };
  process.once('SIGINT', handler);
  if (header !== undefined) report(header);
  try {
    return await run();
  } finally {
    process.removeListener('SIGINT', handler);
  }
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2)}\n`);
}

export function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

export interface Progress {
  update(done: number, total: number, label: string): void;
  stop(): void;
}

/** Seconds between progress lines when stderr is not a terminal. */
export const PROGRESS_LINE_SECONDS = 5;

/**
 * Progress on stderr: a bar when it is a terminal; else (CI logs, pipes) a line at most every
 * PROGRESS_LINE_SECONDS (the CLI reads the real clock; the library never does).
 */
export function progressBar(title: string): Progress {
  if (!process.stderr.isTTY) {
    let last = Date.now();
    return {
      update(done, total, label) {
        const now = Date.now();
        if (now - last < PROGRESS_LINE_SECONDS * 1000) return;
        last = now;
        process.stderr.write(`${title}: ${done}/${total} ${label}\n`);
      },
      stop() {},
    };
  }
  const bar = new cliProgress.SingleBar(
    { stream: process.stderr, format: `${title} [{bar}] {value}/{total} {label}`, hideCursor: true, clearOnComplete: true },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update(done, total, label) {
      if (!started) {
        bar.start(total, done, { label });
        started = true;
      } else {
        bar.setTotal(total);
        bar.update(done, { label });
      }
    },
    stop() {
      if (started) bar.stop();
    },
  };
}

/** Parses an integer option; commander hands strings. */
export function intOption(name: string): (v: string) => number {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isSafeInteger(n)) throw badOption(`--${name} must be an integer, got ${v}`);
    return n;
  };
}
