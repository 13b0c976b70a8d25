// `pmrpc serve` writes its start line only once its SIGTERM handler is installed. A supervisor (the
// real-crash loop, `pmrpc cluster`, a test) sends SIGTERM as soon as it reads that line; until a
// listener exists the kernel's default action kills the process, so a SIGTERM in that window was a
// crash, not the orderly stop the docs promise (seen in a loaded CI run: "serve stops in order" got
// exit null, signal SIGTERM). Run in process, so the moment of the start line is observed exactly.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { registerServe } from '../../cli/serve.js';

t.test('serve: the SIGTERM handler exists when the start line is written; SIGTERM then stops it in order', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-serve-sigterm-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const before = process.listenerCount('SIGTERM');
  let atStartLine: number | undefined;
  let startLine = '';
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]): boolean => {
    const s = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    if (atStartLine === undefined && s.startsWith('{') && s.includes('"port"')) {
      atStartLine = process.listenerCount('SIGTERM');
      startLine = s;
      // What a supervisor does on reading the line: SIGTERM at once.
      setImmediate(() => process.emit('SIGTERM'));
      return true;
    }
    return (write as (c: string | Uint8Array, ...r: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stdout.write;
  t.teardown(() => {
    process.stdout.write = write;
  });
  const program = new Command().exitOverride();
  registerServe(program);
  await program.parseAsync(['serve', '--create', '--pm', join(dir, 'rpc.pm'), '--size', '4M', '--port', '0', '--json'], { from: 'user' });
  t.ok(startLine !== '', 'the start line was written');
  t.equal(atStartLine, before + 1, 'serve\'s SIGTERM handler was installed before its start line');
  t.equal(process.listenerCount('SIGTERM'), before, 'the handler is removed once it ran: the node stopped in order');
  t.match(JSON.parse(startLine), { port: Number }, 'the start line is the node\'s');
});
