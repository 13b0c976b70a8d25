// The repository is self-contained (issue 26): every "DESIGN §N" / "DESIGN §N.M" in code and docs
// names a numbered section of docs/design.md (DESIGN is docs/design.md); the published facts and
// figures are cited as "docs/references.md §N.M", each naming a numbered entry of that page, and
// never by another name (such as the old "REFERENCES", a file outside the repository); and every
// link or relative path in README.md and docs/*.md (outside fenced code blocks) resolves to a file
// inside the repository — with its #anchor, when it has one, naming a heading of that file.
import t from 'tap';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', 'prebuilds', 'build']);
const SCANNED = /\.(ts|mts|cts|js|mjs|cjs|md|json|proto|cc)$/;

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (SKIP_DIRS.has(name)) continue;
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) walk(p, out);
    else if (SCANNED.test(name)) out.push(p);
  }
  return out;
}

const rel = (p: string): string => relative(ROOT, p).split(sep).join('/');
const lineOf = (text: string, index: number): number => text.slice(0, index).split('\n').length;

// ── docs/design.md's numbered sections ────────────────────────────────────────────────────────────

/** The section numbers of a design document: `## N. Title` and `### N.M Title`. */
function designSections(md: string): { sections: Set<string>; order: string[] } {
  const order: string[] = [];
  for (const m of stripFences(md).matchAll(/^(#{2,3}) (\d+)\.(\d+)?[ .]/gm)) {
    const [, hashes, major, minor] = m;
    if (hashes === '##' && minor === undefined) order.push(major!);
    else if (hashes === '###' && minor !== undefined) order.push(`${major}.${minor}`);
  }
  return { sections: new Set(order), order };
}

/**
 * Every DESIGN reference in a text: "DESIGN §2.1", a comment wrapped between "DESIGN" and "§"
 * ("DESIGN\n * §2.2"), and the sections listed after it ("DESIGN §6, §8", "DESIGN §5 / §9").
 */
function designRefs(text: string): { section: string; index: number }[] {
  return citedSections(text, /(?:DESIGN(?:\.md)?|design\.md\)?)(?:[ \t]|\n[ \t]*(?:\*|\/\/|#)?[ \t]*)*§[ \t]*(\d+(?:\.\d+)*)/g);
}

/**
 * Every citation of docs/references.md by section: "docs/references.md §7.2", "docs/references.md
 * (§8)", a comment wrapped between the name and "§", and the sections listed after the first
 * ("docs/references.md §4.3, §3.5", a list wrapped onto the next line).
 */
function referencesRefs(text: string): { section: string; index: number }[] {
  return citedSections(text, /docs\/references\.md(?:[ \t]|\n[ \t]*(?:\*|\/\/|#)?[ \t]*)*\(?§[ \t]*(\d+(?:\.\d+)*)/g);
}

/** Anchors of docs/references.md named in a text outside markdown links: "docs/references.md#7-cost-model-calibration". */
function referencesAnchors(text: string): { anchor: string; index: number }[] {
  return [...text.matchAll(/docs\/references\.md#([\w-]+)/g)].map((m) => ({ anchor: m[1]!, index: m.index! }));
}

/**
 * Names of the published sources other than docs/references.md: the old "REFERENCES" /
 * "REFERENCES.md" (a file outside the repository), and — outside markdown pages, whose links the
 * link test resolves — a "references.md" without its folder. SQL's "REFERENCES table(column)" is
 * not one.
 */
function foreignReferenceNames(text: string, markdown: boolean): { name: string; index: number }[] {
  const out: { name: string; index: number }[] = [];
  for (const m of text.matchAll(/\bREFERENCES(?:\.md)?\b(?![ \t]+\w+[ \t]*\()/g)) out.push({ name: m[0], index: m.index! });
  if (!markdown) for (const m of text.matchAll(/(?<!docs\/)\b[Rr]eferences\.md\b/g)) out.push({ name: m[0], index: m.index! });
  return out.sort((a, b) => a.index - b.index);
}

/** The sections a head pattern cites (its group 1), and the sections listed after each: ", §8", " / §9", " and §3". */
function citedSections(text: string, head: RegExp): { section: string; index: number }[] {
  const out: { section: string; index: number }[] = [];
  for (const m of text.matchAll(head)) {
    out.push({ section: m[1]!, index: m.index! });
    // Sections listed after the first: ", §8", " / §9", " and §3".
    let rest = text.slice(m.index! + m[0].length);
    let offset = m.index! + m[0].length;
    for (;;) {
      const more = /^(?:\s*(?:\([^)]*\))?)?\s*(?:,|\/|and|or|;)(?:\s|\*|\/\/)*§[ \t]*(\d+(?:\.\d+)*)/.exec(rest);
      if (more === null) break;
      out.push({ section: more[1]!, index: offset });
      rest = rest.slice(more[0].length);
      offset += more[0].length;
    }
  }
  return out;
}

/** The text with every docs/references.md citation (and the sections listed after it) blanked, offsets kept. */
function blankReferencesCitations(text: string): string {
  const re = /docs\/references\.md(?:[ \t]|\n[ \t]*(?:\*|\/\/|#)?[ \t]*)*\(?§[ \t]*\d+(?:\.\d+)*(?:\s*(?:,|\/|and|or|;)(?:\s|\*|\/\/)*§[ \t]*\d+(?:\.\d+)*)*/g;
  return text.replace(re, (c) => c.replace(/[^\n]/g, ' '));
}

/** The text with fenced code blocks blanked (offsets and line numbers kept). */
function stripFences(md: string): string {
  return md.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, (block) => block.replace(/[^\n]/g, ' '));
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2, … */
function headingAnchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of stripFences(md).matchAll(/^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$/gm)) {
    const text = m[1]!.replace(/`/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const base = text.toLowerCase().replace(/[^\p{L}\p{N}\- _]/gu, '').replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Links of a markdown text outside fenced code blocks and inline code: [text](target), ![alt](target), [ref]: target. */
function markdownLinks(md: string): { target: string; index: number }[] {
  const prose = stripFences(md).replace(/`[^`\n]*`/g, (code) => ' '.repeat(code.length));
  const out: { target: string; index: number }[] = [];
  for (const m of prose.matchAll(/!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push({ target: m[1]!, index: m.index! });
  for (const m of prose.matchAll(/^\s{0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)) out.push({ target: m[1]!, index: m.index! });
  return out;
}

/** Paths in prose (inline code included, fenced blocks not) that leave the file's folder upwards, or name a machine's absolute path. */
function proseUpwardPaths(md: string): { path: string; index: number }[] {
  const prose = stripFences(md);
  const out: { path: string; index: number }[] = [];
  for (const m of prose.matchAll(/(?<![\w./-])((?:\.\.\/)+[\w.@+-][\w./@+-]*)/g)) out.push({ path: m[1]!, index: m.index! });
  for (const m of prose.matchAll(/(?<![\w.:/-])(\/(?:work|home|Users|root)\/[\w./@+-]*)/g)) out.push({ path: m[1]!, index: m.index! });
  return out;
}

/**
 * Section numbers out of order: they run 1, 2, 2.1, 2.2, …, 3, …, each top-level number one more
 * than the last, each subsection under its own section and one more than the last.
 */
function outOfOrder(order: readonly string[]): string[] {
  let major = 0;
  let minor = 0;
  const bad: string[] = [];
  for (const s of order) {
    const [a, b] = s.split('.').map(Number);
    if (b === undefined) {
      if (a !== major + 1) bad.push(`§${s} after §${major}`);
      major = a!;
      minor = 0;
    } else {
      if (a !== major || b !== minor + 1) bad.push(`§${s} after §${major}.${minor}`);
      minor = b;
    }
  }
  return bad;
}

const insideRepo = (abs: string): boolean => abs === ROOT || abs.startsWith(ROOT + sep);

// ── the tests ─────────────────────────────────────────────────────────────────────────────────────

const designPath = join(ROOT, 'docs', 'design.md');
const design = existsSync(designPath) ? readFileSync(designPath, 'utf8') : '';
const { sections, order } = designSections(design);
const refsPath = join(ROOT, 'docs', 'references.md');
const refsMd = existsSync(refsPath) ? readFileSync(refsPath, 'utf8') : '';
const refs = designSections(refsMd);
const files = walk(ROOT);
const mdDocs = [join(ROOT, 'README.md'), ...readdirSync(join(ROOT, 'docs')).filter((n) => n.endsWith('.md')).map((n) => join(ROOT, 'docs', n))];

t.test('the helpers see what they should (and fail on what they should)', async (t) => {
  t.same(designRefs('a (DESIGN §2.1) b').map((r) => r.section), ['2.1']);
  t.same(designRefs(' * from host memory (DESIGN\n * §2.2 (i)) and').map((r) => r.section), ['2.2']);
  t.same(designRefs('// DESIGN\n// §7').map((r) => r.section), ['7']);
  t.same(designRefs('(DESIGN §6, §8)').map((r) => r.section), ['6', '8']);
  t.same(designRefs('DESIGN §5 / §9. GET').map((r) => r.section), ['5', '9']);
  t.same(designRefs('DESIGN §2.2 (iii), §5 and §8').map((r) => r.section), ['2.2', '5', '8']);
  t.same(designRefs('DESIGN.md §12.3').map((r) => r.section), ['12.3']);
  t.same(designRefs('see docs/design.md §4 and [design.md](design.md) §2.2').map((r) => r.section), ['4', '2.2']);
  t.same(designRefs('design §3 and § 4').map((r) => r.section), [], 'only DESIGN (upper case) is a reference');
  const s = designSections('# T\n## 1. One\n### 1.1 Sub\n```\n## 9. in a fence\n```\n## 2. Two\n');
  t.same(s.order, ['1', '1.1', '2']);
  t.same(markdownLinks('see [a](x.md#y) and `[b](no.md)` and\n```\n[c](no2.md)\n```\n[r]: ../out.md').map((l) => l.target), ['x.md#y', '../out.md']);
  t.same(proseUpwardPaths('in [D](../shared/DESIGN.md) and `/work/wt-base` but\n```\ncd ../x\n```').map((p) => p.path), ['../shared/DESIGN.md', '/work/wt-base']);
  const anchors = headingAnchors('# pmrpc — design\n## 2. The hardware model (the fidelity contract)\n### 2.1 PM device (pmem/)\n## Notes\n## Notes\n');
  t.ok(anchors.has('2-the-hardware-model-the-fidelity-contract'));
  t.ok(anchors.has('21-pm-device-pmem'));
  t.ok(anchors.has('notes-1'), 'a repeated heading gets -1');
});

t.test('docs/design.md has numbered sections in order', async (t) => {
  t.ok(design.length > 0, 'docs/design.md exists');
  const words = stripFences(design).split(/\s+/).filter((w) => /[\p{L}\p{N}]/u.test(w)).length;
  t.ok(words >= 3000, `docs/design.md has ${words} words (at least 3,000)`);
  t.same(outOfOrder(order), [], 'section numbers run in order');
  t.ok(order.length >= 10, `${order.length} numbered sections`);
});

t.test('every DESIGN §N reference names a section of docs/design.md', async (t) => {
  const missing: string[] = [];
  let count = 0;
  for (const f of files) {
    if (rel(f) === 'test/docs/references.test.ts') continue; // its own examples
    const text = readFileSync(f, 'utf8');
    if (!text.includes('DESIGN')) continue;
    for (const r of designRefs(text)) {
      count++;
      if (!sections.has(r.section)) missing.push(`${rel(f)}:${lineOf(text, r.index)}: DESIGN §${r.section}`);
    }
  }
  // Within docs/design.md, a bare §N cross-reference must resolve too (a docs/references.md
  // citation is checked against that page, below).
  for (const m of blankReferencesCitations(stripFences(design)).matchAll(/§[ \t]*(\d+(?:\.\d+)*)/g)) {
    count++;
    if (!sections.has(m[1]!)) missing.push(`docs/design.md:${lineOf(design, m.index!)}: §${m[1]}`);
  }
  t.ok(count >= 200, `${count} references checked`);
  t.same(missing, [], 'references to sections docs/design.md does not have');
});

t.test('docs/references.md: the helpers see what they should (and fail on what they should)', async (t) => {
  t.same(referencesRefs('(docs/references.md §7.2) b').map((r) => r.section), ['7.2']);
  t.same(referencesRefs('docs/references.md (§8) beside').map((r) => r.section), ['8']);
  t.same(referencesRefs(' * SIGMOD\'23 (docs/references.md\n * §4.6):').map((r) => r.section), ['4.6']);
  t.same(referencesRefs('Dolev; docs/references.md §4.3, §3.5)').map((r) => r.section), ['4.3', '3.5']);
  t.same(referencesRefs('on npm — docs/references.md §6.1,\n§6.2). x').map((r) => r.section), ['6.1', '6.2']);
  t.same(referencesRefs('[docs/references.md §7](references.md#7-cost-model-calibration)').map((r) => r.section), ['7']);
  t.same(referencesRefs('DESIGN §7 and references §3'), [], 'only docs/references.md cites it');
  t.same(referencesAnchors('see docs/references.md#7-cost-model-calibration.').map((a) => a.anchor), ['7-cost-model-calibration']);
  const names = (x: string, md = false): string[] => foreignReferenceNames(x, md).map((n) => n.name);
  t.same(names('in REFERENCES.md (the source of'), ['REFERENCES.md']);
  t.same(names('exists (REFERENCES): these'), ['REFERENCES']);
  t.same(names('REFERENCES gives 5 M ops/s per core'), ['REFERENCES'], 'not SQL: no (column) after the word');
  t.same(names('run_id INTEGER NOT NULL REFERENCES runs(id),'), [], 'SQL\'s foreign key clause');
  t.same(names('see references.md §7 or docs/references.md §7'), ['references.md'], 'outside markdown, the path from the root');
  t.same(names('in [references.md](references.md#7-x)', true), [], 'a markdown link, resolved by the link test');
  t.same(names('docs/references.md §7.13 gives'), []);
  t.same([...blankReferencesCitations('§2 (docs/references.md §8), §3 and docs/references.md §4.3, §3.5. §9').matchAll(/§(\d+(?:\.\d+)*)/g)].map((m) => m[1]), ['2', '3', '9']);
  const r = designSections('# T\n## 1. One\n### 1.1 Sub\n### 1.3 Gap\n## 3. Three\n');
  t.same(outOfOrder(r.order), ['§1.3 after §1.1', '§3 after §1']);
});

t.test('docs/references.md has numbered entries in order, its own cross-references resolve', async (t) => {
  t.ok(refsMd.length > 0, 'docs/references.md exists');
  t.same(outOfOrder(refs.order), [], 'section numbers run in order');
  t.ok(refs.order.length >= 50, `${refs.order.length} numbered entries`);
  const text = stripFences(refsMd);
  const missing: string[] = [];
  for (const m of text.matchAll(/§[ \t]*(\d+(?:\.\d+)*)/g)) {
    // DESIGN §N and design.md §N name docs/design.md (checked above).
    if (/(?:DESIGN|design\.md)\s*$/.test(text.slice(Math.max(0, m.index! - 20), m.index!))) continue;
    if (!refs.sections.has(m[1]!)) missing.push(`docs/references.md:${lineOf(refsMd, m.index!)}: §${m[1]}`);
  }
  t.same(missing, [], 'cross-references to entries the page does not have');
});

t.test('every docs/references.md citation names an entry it has, and nothing names the sources otherwise', async (t) => {
  const missing: string[] = [];
  const foreign: string[] = [];
  let count = 0;
  const anchors = headingAnchors(refsMd);
  for (const f of files) {
    if (rel(f) === 'test/docs/references.test.ts') continue; // its own examples
    const text = readFileSync(f, 'utf8');
    for (const n of foreignReferenceNames(text, f.endsWith('.md'))) foreign.push(`${rel(f)}:${lineOf(text, n.index)}: ${n.name}`);
    if (!text.includes('references.md')) continue;
    for (const r of referencesRefs(text)) {
      count++;
      if (!refs.sections.has(r.section)) missing.push(`${rel(f)}:${lineOf(text, r.index)}: docs/references.md §${r.section}`);
    }
    for (const a of referencesAnchors(text)) {
      count++;
      if (!anchors.has(a.anchor.toLowerCase())) missing.push(`${rel(f)}:${lineOf(text, a.index)}: docs/references.md#${a.anchor}`);
    }
  }
  t.ok(count >= 50, `${count} citations checked`);
  t.same(missing, [], 'citations of entries docs/references.md does not have');
  t.same(foreign, [], 'the published sources named other than as docs/references.md');
});

t.test('nothing names the design document outside the repository', async (t) => {
  const outside: string[] = [];
  for (const f of files) {
    if (rel(f) === 'test/docs/references.test.ts') continue;
    const text = readFileSync(f, 'utf8');
    for (const m of text.matchAll(/shared\/DESIGN|\.\.\/DESIGN\.md|\/work\/shared/g)) outside.push(`${rel(f)}:${lineOf(text, m.index!)}: ${m[0]}`);
  }
  t.same(outside, []);
});

t.test('every link and relative path in README.md and docs/*.md resolves inside the repository', async (t) => {
  const broken: string[] = [];
  let checked = 0;
  for (const f of mdDocs) {
    const text = readFileSync(f, 'utf8');
    for (const { target, index } of markdownLinks(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: — not a path
      checked++;
      const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
      const abs = pathPart === '' ? f : resolve(dirname(f), decodeURIComponent(pathPart));
      const where = `${rel(f)}:${lineOf(text, index)}: ${target}`;
      if (!insideRepo(abs)) { broken.push(`${where} (outside the repository)`); continue; }
      if (!existsSync(abs)) { broken.push(`${where} (no such file)`); continue; }
      if (anchor !== undefined && anchor !== '' && abs.endsWith('.md') && !headingAnchors(readFileSync(abs, 'utf8')).has(anchor.toLowerCase())) {
        broken.push(`${where} (no heading #${anchor} in ${rel(abs)})`);
      }
    }
    for (const { path, index } of proseUpwardPaths(text)) {
      checked++;
      const where = `${rel(f)}:${lineOf(text, index)}: ${path}`;
      if (path.startsWith('/')) { broken.push(`${where} (a machine's absolute path)`); continue; }
      const abs = resolve(dirname(f), path.replace(/[.,;:]+$/, ''));
      if (!insideRepo(abs)) broken.push(`${where} (outside the repository)`);
      else if (!existsSync(abs)) broken.push(`${where} (no such file)`);
    }
  }
  t.ok(checked >= 20, `${checked} links and paths checked`);
  t.same(broken, [], 'links and paths that do not resolve inside the repository');
});

// ── docs/architecture.md names today's tree ───────────────────────────────────────────────────────

/** Repository paths named in a markdown text outside fenced code blocks (`src/rpc/server.ts`, `recovery/`). */
function namedPaths(md: string): { path: string; index: number }[] {
  const prose = stripFences(md);
  const out: { path: string; index: number }[] = [];
  const re = /(?<![\w./#-])((?:pmem|flush|recovery|src|bench|cli|test|native|proto|docs|\.ci)\/[\w./-]*)/g;
  for (const m of prose.matchAll(re)) out.push({ path: m[1]!.replace(/[.,;:]+$/, ''), index: m.index! });
  return out;
}

/** `Name` or `Name.member` written right before (`path.ts`): the name and member a file must define. */
function namedSymbols(md: string): { name: string; member?: string; path: string; index: number }[] {
  const out: { name: string; member?: string; path: string; index: number }[] = [];
  const re = /`([A-Za-z_$][\w$]*)((?:\.#?[\w$]+)?)(?:\([^`]*\))?` \(`([\w./-]+\.ts)`/g;
  for (const m of stripFences(md).matchAll(re)) {
    out.push({ name: m[1]!, ...(m[2] ? { member: m[2].slice(1) } : {}), path: m[3]!, index: m.index! });
  }
  return out;
}

/** Whether a TypeScript source exports `name`, and (when asked) defines `member` in it. */
function definesSymbol(src: string, name: string, member?: string): boolean {
  const esc = (s: string): string => s.replace(/[$#]/g, '\\$&');
  const exported =
    new RegExp(`export\\s+(?:declare\\s+)?(?:default\\s+)?(?:abstract\\s+)?(?:async\\s+)?(?:class|function\\*?|const|let|interface|type|enum)\\s+${esc(name)}\\b`).test(src) ||
    new RegExp(`export\\s*(?:type\\s*)?\\{[^}]*\\b${esc(name)}\\b[^}]*\\}`).test(src);
  if (!exported) return false;
  if (member === undefined) return true;
  return new RegExp(`(?:^|[\\s{,])(?:static\\s+|async\\s+|get\\s+|readonly\\s+)*${esc(member)}\\s*(?:<[^>]*>)?\\s*[(:=]`, 'm').test(src);
}

t.test('docs/architecture.md: the helpers see what they should', async (t) => {
  t.same(namedPaths('in `src/node/host.ts`, flush/ and (recovery/ring.ts).\n```\nsrc/x.ts\n```').map((p) => p.path), ['src/node/host.ts', 'flush/', 'recovery/ring.ts']);
  t.same(namedSymbols('`NodeHost.start` (`src/node/host.ts`) and `Ring.poll` (`recovery/ring.ts`), `encodeEntry` (`recovery/ring.ts`: x)').map(({ index: _i, ...s }) => s), [
    { name: 'NodeHost', member: 'start', path: 'src/node/host.ts' },
    { name: 'Ring', member: 'poll', path: 'recovery/ring.ts' },
    { name: 'encodeEntry', path: 'recovery/ring.ts' },
  ]);
  const src = 'export class A {\n  static async start(o) {}\n  #wrs(p) {}\n}\nexport const b = Object.freeze({ format(r) {} });\nexport { C } from "./c.js";';
  t.ok(definesSymbol(src, 'A', 'start'));
  t.ok(definesSymbol(src, 'A', '#wrs'));
  t.ok(definesSymbol(src, 'b', 'format'));
  t.ok(definesSymbol(src, 'C'));
  t.notOk(definesSymbol(src, 'A', 'stop'), 'a missing member');
  t.notOk(definesSymbol(src, 'D'), 'a missing export');
  t.notOk(definesSymbol('class E {}', 'E'), 'defined but not exported');
});

t.test('every source path docs/architecture.md names exists, with the exports named beside it', async (t) => {
  const md = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
  const paths = namedPaths(md);
  t.ok(paths.length >= 60, `${paths.length} paths named`);
  const missing = paths.filter((p) => !existsSync(join(ROOT, p.path))).map((p) => `docs/architecture.md:${lineOf(md, p.index)}: ${p.path}`);
  t.same(missing, [], 'paths that do not exist');
  const symbols = namedSymbols(md);
  t.ok(symbols.length >= 40, `${symbols.length} names checked against their files`);
  const wrong = symbols
    .filter((s) => !existsSync(join(ROOT, s.path)) || !definesSymbol(readFileSync(join(ROOT, s.path), 'utf8'), s.name, s.member))
    .map((s) => `docs/architecture.md:${lineOf(md, s.index)}: ${s.name}${s.member ? `.${s.member}` : ''} in ${s.path}`);
  t.same(wrong, [], 'names the named file does not export (or define)');
  // The files the old page named, gone since: they must not come back as names.
  for (const gone of ['src/transport/tcp.ts', 'src/server/handshake.ts', 'src/crash/engine.ts']) t.notOk(md.includes(gone), `${gone} is not named`);
});
