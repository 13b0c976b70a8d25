/** Output conventions of the CLI: one JSON document on stdout with --json; progress and logs on stderr. */
import cliProgress from 'cli-progress';

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

/** A progress bar on stderr when it is a terminal; silent otherwise (CI logs, pipes). */
export function progressBar(title: string): Progress {
  if (!process.stderr.isTTY) return { update() {}, stop() {} };
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
    if (!Number.isSafeInteger(n)) throw new TypeError(`--${name} must be an integer, got ${v}`);
    return n;
  };
}
