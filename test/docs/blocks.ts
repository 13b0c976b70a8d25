// The code blocks and CLI commands of README.md and docs/*.md, for the docs tests (test/docs/).
//
// Every fenced block declares what it is by its info string (README.md, "Code blocks in the docs"):
//   ts              a whole program: compiled under the project's tsconfig (strict) with 'pmrpc'
//                   resolved to this checkout, then run in a fresh directory; exits 0 within RUN_BOUND_MS
//   ts fragment     an excerpt or API sketch (free names, elisions): neither compiled nor run
//   js fragment     the same for JavaScript
//   sh              shell commands: every `pmrpc …` in it is checked against that command's --help
//   sh run          the same, and run with bash (pmrpc = this checkout's dist/cli/main.js) in a fresh
//                   directory: exits 0 within RUN_BOUND_MS
//   text            output, layouts, synopses: `pmrpc …` lines are checked against --help
//   json            parsed with JSON.parse
//   ini, yaml       configuration files for other tools: shown, not run
// A block without an info string is text; one with another info string fails the test.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * The bound of one runnable block (`ts`, `sh run`), stated in README.md: what a hung example hits.
 * Measured 4–18 s each on the shared 2-core machine at load ~28.
 */
export const RUN_BOUND_MS = 120_000;

export const KINDS = ['ts', 'ts fragment', 'js fragment', 'sh', 'sh run', 'text', 'json', 'ini', 'yaml', 'mermaid'] as const;
export type Kind = (typeof KINDS)[number];

export interface Block {
  file: string; // relative to the checkout
  line: number; // of the opening fence, 1-based
  info: string;
  body: string;
}

/** README.md and every docs/*.md. */
export function docFiles(): string[] {
  return ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
}

/** The fenced blocks of a Markdown text (``` or ~~~ fences, CommonMark's closing rule). */
export function parseBlocks(file: string, text: string): { blocks: Block[]; unclosed: number[] } {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  let open: { line: number; fence: string; info: string } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const m = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(lines[i]!);
    if (m === null) continue;
    if (open === undefined) open = { line: i + 1, fence: m[1]!, info: m[2]!.trim() };
    else if (m[1]![0] === open.fence[0] && m[1]!.length >= open.fence.length && m[2]!.trim() === '') {
      blocks.push({ file, line: open.line, info: open.info, body: lines.slice(open.line, i).join('\n') });
      open = undefined;
    }
  }
  return { blocks, unclosed: open === undefined ? [] : [open.line] };
}

export function allBlocks(): Block[] {
  return docFiles().flatMap((f) => parseBlocks(f, readFileSync(join(ROOT, f), 'utf8')).blocks);
}

/** A `pmrpc …` command as the docs write it: the words after `pmrpc` and the --flags given. */
export interface DocCommand {
  file: string;
  line: number;
  text: string;
  /** The command path: ['crash-test'], ['cluster', 'up|status|down'] (alternatives joined by '|'). */
  words: string[];
  flags: string[];
  /** In a code block (a synopsis or a shell line), not in a code span of the prose. */
  inBlock: boolean;
}

const FLAG = /(?<![\w-])--[a-z][a-z0-9-]*/g;

/** Splits one command-bearing text into its `pmrpc` commands (several may share a line). */
function commandsIn(file: string, line: number, text: string, inBlock: boolean): DocCommand[] {
  const out: DocCommand[] = [];
  const re = /(?<![\w./-])pmrpc ((?:[a-z][a-z0-9|-]*)(?: (?:[a-z][a-z0-9|-]*|<[a-z]+>))?)/g;
  const starts = [...text.matchAll(re)];
  for (const [k, m] of starts.entries()) {
    const end = k + 1 < starts.length ? starts[k + 1]!.index : text.length;
    // A comment, a pipe into another program or a second shell command ends it.
    const rest = text.slice(m.index, end).split(/\s#\s|\s&&\s|\s;\s|\s\|\s|\s>\s/)[0]!;
    out.push({ file, line, text: rest.trim(), words: m[1]!.split(' '), flags: [...rest.matchAll(FLAG)].map((f) => f[0]), inBlock });
  }
  return out;
}

/**
 * Every `pmrpc …` command in the docs: in `sh` and `text` blocks (a synopsis line and its
 * indented `[--flag …]` continuation lines; two or more spaces end the command: a description
 * follows) and in inline code spans of the prose.
 */
export function docCommands(): DocCommand[] {
  const out: DocCommand[] = [];
  for (const file of docFiles()) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const lines = text.split('\n');
    const { blocks } = parseBlocks(file, text);
    const inBlock = new Set<number>();
    for (const b of blocks) {
      const n = b.body === '' ? 0 : b.body.split('\n').length;
      for (let i = b.line; i <= b.line + n + 1; i++) inBlock.add(i);
      const kind = b.info === '' ? 'text' : b.info.split(/\s+/)[0];
      if (kind !== 'sh' && kind !== 'text') continue;
      const body = b.body.split('\n');
      for (let i = 0; i < body.length; i++) {
        let l = body[i]!.replace(/^\$ /, '');
        if (!/(^|\s)pmrpc /.test(l)) continue;
        // Continuation lines of a synopsis: indented, starting with an option.
        while (i + 1 < body.length && /^\s+(\[--|--)/.test(body[i + 1]!)) l += ` ${body[++i]!.trim().split(/\s{2,}/)[0]}`;
        const cmd = kind === 'text' ? l.trim().split(/\s{2,}/)[0]! : l;
        out.push(...commandsIn(file, b.line + 1 + i, cmd, true));
      }
    }
    // Prose: paragraphs (a code span may cross a line break), outside the blocks.
    let para: string[] = [];
    let first = 0;
    const flush = (): void => {
      const p = para.join('\n');
      for (const span of p.matchAll(/`([^`]+)`/g)) out.push(...commandsIn(file, first + p.slice(0, span.index).split('\n').length - 1, span[1]!.replace(/\s+/g, ' '), false));
      para = [];
    };
    for (const [i, l] of lines.entries()) {
      if (inBlock.has(i + 1) || l.trim() === '') {
        flush();
        continue;
      }
      if (para.length === 0) first = i + 1;
      para.push(l);
    }
    flush();
  }
  return out;
}
