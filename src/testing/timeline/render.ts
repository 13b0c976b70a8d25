/**
 * A picture of a violation (DESIGN §8: "a violation writes a timeline of the shortest failing
 * history (HTML/SVG) beside its replay command"): one self-contained HTML page — inline CSS and
 * inline SVG, no script, no external asset — in the manner of Porcupine's visualiser and Jepsen's
 * timeline. One lane per client (client -1, the reads made after recovery, last); each operation a
 * bar from call to return; an operation cut by a crash runs, hatched and open-ended, to the next
 * crash line; crash points are vertical lines; the operations the checker names are red.
 *
 * The time axis is by rank: the distinct event times (calls, returns, crashes) are spaced evenly,
 * wide enough for the labels, and each tick carries its logical time — so a history whose times
 * are sparse (event counters of a long run) still reads, and concurrency is exactly what overlaps.
 */
import { writeFileSync } from 'node:fs';

/** One operation of the picture. Times are logical (any monotonic unit). */
export interface TimelineOperation {
  /** Lane: the client id; -1 for reads made after recovery. */
  client: number;
  call: number;
  /** Undefined when a crash cut the operation (its outcome is unknown). */
  ret: number | undefined;
  /** What it did and what it saw, e.g. `put(k1, v3)`, `get(k1) → v2`. */
  label: string;
  /** Named by the checker: drawn red. */
  highlight?: boolean;
  /** The node it went to, when the app has several. */
  node?: number;
}

export interface TimelineCrash {
  time: number;
  /** E.g. `crash #12: node 1, 2`. */
  label: string;
}

export interface TimelineInput {
  title: string;
  app: string;
  seed: number | string;
  /** The command that reproduces the failure. */
  replay: string;
  violation: { kind: string; detail: string };
  operations: readonly TimelineOperation[];
  crashes: readonly TimelineCrash[];
}

/** Escapes text for HTML and SVG text and attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&#39;'));
}

// Geometry (px). The font is monospace so a label's width is its length times CHAR_PX.
const CHAR_PX = 7.3;
const LANE_LABEL_PX = 130;
const ROW_PX = 30;
const BAR_PX = 20;
const LANE_PAD_PX = 8;
const TOP_PX = 46; // room for crash labels above the lanes
const AXIS_PX = 34;
const STEP_MIN_PX = 28;
const LABEL_MAX_CHARS = 48;

interface Placed {
  op: TimelineOperation;
  index: number;
  x0: number;
  x1: number;
  cut: boolean;
  row: number;
}

function laneName(client: number): string {
  return client === -1 ? 'after recovery' : `client ${client}`;
}

function fmtTime(t: number): string {
  return Number.isInteger(t) ? String(t) : String(Math.round(t * 100) / 100);
}

/** The label as drawn: what the op did, with `cut` for a crash-cut op; full text goes in the tooltip. */
function drawnLabel(op: TimelineOperation, cut: boolean): string {
  return cut ? `${op.label} · cut` : op.label;
}

function clip(s: string, maxChars: number): string {
  if (maxChars < 2) return '';
  return s.length <= maxChars ? s : `${s.slice(0, Math.max(1, maxChars - 1))}…`;
}

function validate(input: TimelineInput): void {
  for (const [i, op] of input.operations.entries()) {
    if (!Number.isSafeInteger(op.client)) throw new TypeError(`operations[${i}].client must be an integer, got ${op.client}`);
    if (!Number.isFinite(op.call)) throw new RangeError(`operations[${i}].call must be a finite number, got ${op.call}`);
    if (op.ret !== undefined && (!Number.isFinite(op.ret) || op.ret < op.call)) {
      throw new RangeError(`operations[${i}] has call ${op.call} and return ${op.ret}: need a finite return >= call`);
    }
  }
  for (const [i, c] of input.crashes.entries()) {
    if (!Number.isFinite(c.time)) throw new RangeError(`crashes[${i}].time must be a finite number, got ${c.time}`);
  }
}

/** Renders the timeline page. Pure: the same input gives the same bytes. */
export function renderTimelineHtml(input: TimelineInput): string {
  validate(input);
  const ops = input.operations;
  const crashes = [...input.crashes].sort((a, b) => a.time - b.time);

  // The axis: distinct times by rank, plus one slot past the end for cut ops with no later crash.
  const times = [...new Set([...ops.flatMap((o) => (o.ret === undefined ? [o.call] : [o.call, o.ret])), ...crashes.map((c) => c.time)])].sort((a, b) => a - b);
  const rank = new Map(times.map((t, i) => [t, i]));
  const endRank = times.length; // the "never returned" edge
  const cutEndRank = (op: TimelineOperation): number => {
    const c = crashes.find((k) => k.time >= op.call);
    return c ? rank.get(c.time)! : endRank;
  };
  const spans = ops.map((op) => {
    const r0 = rank.get(op.call)!;
    const r1 = op.ret === undefined ? cutEndRank(op) : rank.get(op.ret)!;
    return { r0, r1: Math.max(r1, r0 + 1), cut: op.ret === undefined };
  });
  // Column widths: one gap per pair of neighbouring event times, each at least STEP_MIN_PX, widened
  // (shortest operations first, the deficit spread over the gaps an operation spans) until each
  // label fits inside its bar; labels longer than LABEL_MAX_CHARS are clipped (the tooltip and the
  // table below the picture have them whole).
  const gaps = new Array<number>(endRank + 1).fill(STEP_MIN_PX);
  const order = ops.map((_, i) => i).sort((a, b) => spans[a]!.r1 - spans[a]!.r0 - (spans[b]!.r1 - spans[b]!.r0) || a - b);
  for (const i of order) {
    const s = spans[i]!;
    const need = Math.min(drawnLabel(ops[i]!, s.cut).length, LABEL_MAX_CHARS) * CHAR_PX + 12;
    let have = 0;
    for (let g = s.r0; g < s.r1; g++) have += gaps[g]!;
    if (have < need) for (let g = s.r0; g < s.r1; g++) gaps[g]! += Math.ceil((need - have) / (s.r1 - s.r0));
  }
  const pos = [LANE_LABEL_PX + 20];
  for (const g of gaps) pos.push(pos[pos.length - 1]! + g);
  const x = (r: number): number => pos[r]!;

  // Lanes, and rows within a lane for operations that overlap (greedy interval colouring).
  const clients = [...new Set(ops.map((o) => o.client))].sort((a, b) => (a === -1 ? 1 : b === -1 ? -1 : a - b));
  const placed: Placed[] = ops.map((op, index) => ({ op, index, x0: x(spans[index]!.r0), x1: x(spans[index]!.r1), cut: spans[index]!.cut, row: 0 }));
  const laneTop = new Map<number, number>();
  const laneRows = new Map<number, number>();
  let y = TOP_PX;
  for (const c of clients) {
    const mine = placed.filter((p) => p.op.client === c).sort((a, b) => a.x0 - b.x0 || a.index - b.index);
    const rowEnd: number[] = [];
    for (const p of mine) {
      let r = rowEnd.findIndex((end) => end + 4 <= p.x0);
      if (r === -1) r = rowEnd.push(0) - 1;
      rowEnd[r] = p.x1;
      p.row = r;
    }
    const rows = Math.max(1, rowEnd.length);
    laneTop.set(c, y);
    laneRows.set(c, rows);
    y += rows * ROW_PX + 2 * LANE_PAD_PX;
  }
  const lanesBottom = y;
  // Wide enough for the last bar and for every crash label (drawn right of its line; 12px bold text).
  const crashLabelEnd = Math.max(0, ...crashes.map((c) => x(rank.get(c.time)!) + 4 + (c.label.length + 3) * 8));
  const width = Math.ceil(Math.max(x(endRank) + STEP_MIN_PX + 40, crashLabelEnd + 12));
  const height = lanesBottom + AXIS_PX;

  const svg: string[] = [];
  svg.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="timeline of the failing history">`);
  svg.push(
    '<defs>' +
      '<pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#e9eff7"/><line x1="0" y1="0" x2="0" y2="6" stroke="#b4c4d8" stroke-width="2.5"/></pattern>' +
      '<pattern id="hatch-red" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fde8e8"/><line x1="0" y1="0" x2="0" y2="6" stroke="#eaa0a0" stroke-width="2.5"/></pattern>' +
      '</defs>',
  );
  // Lane backgrounds and names.
  clients.forEach((c, i) => {
    const top = laneTop.get(c)!;
    const h = laneRows.get(c)! * ROW_PX + 2 * LANE_PAD_PX;
    svg.push(`<rect class="lane${i % 2 ? ' odd' : ''}${c === -1 ? ' recovery' : ''}" x="0" y="${top}" width="${width}" height="${h}"/>`);
    svg.push(`<text class="lane-name" x="10" y="${top + h / 2 + 4}">${escapeHtml(laneName(c))}</text>`);
  });
  // Time axis: a tick per distinct time.
  svg.push(`<line class="axis" x1="${x(0) - 10}" y1="${lanesBottom + 6}" x2="${x(endRank)}" y2="${lanesBottom + 6}"/>`);
  let lastTickX = Number.NEGATIVE_INFINITY; // keep tick labels apart
  times.forEach((t, i) => {
    const tx = x(i);
    svg.push(`<line class="grid" x1="${tx}" y1="${TOP_PX}" x2="${tx}" y2="${lanesBottom}"/>`);
    svg.push(`<line class="axis" x1="${tx}" y1="${lanesBottom + 2}" x2="${tx}" y2="${lanesBottom + 10}"/>`);
    if (tx - lastTickX >= 36 && (lastTickX = tx)) svg.push(`<text class="tick" x="${tx}" y="${lanesBottom + 24}" text-anchor="middle">${escapeHtml(fmtTime(t))}</text>`);
  });
  svg.push(`<text class="tick" x="${x(0) - 14}" y="${lanesBottom + 24}" text-anchor="end">t</text>`);
  // Operations.
  for (const p of placed) {
    const top = laneTop.get(p.op.client)! + LANE_PAD_PX + p.row * ROW_PX + (ROW_PX - BAR_PX) / 2;
    const cls = `op${p.op.highlight ? ' hl' : ''}${p.cut ? ' cut' : ''}`;
    const full = drawnLabel(p.op, p.cut);
    const tip = `${laneName(p.op.client)}${p.op.node !== undefined ? ` → node ${p.op.node}` : ''}: ${full} [${fmtTime(p.op.call)}, ${p.op.ret === undefined ? 'cut by a crash' : fmtTime(p.op.ret)}]`;
    const w = p.x1 - p.x0;
    svg.push(`<g class="${cls}"><title>${escapeHtml(tip)}</title>`);
    if (p.cut) {
      // Open-ended: the body is hatched, the outline has no right edge, a zigzag marks the cut.
      svg.push(`<rect class="body" x="${p.x0}" y="${top}" width="${w}" height="${BAR_PX}" fill="url(#${p.op.highlight ? 'hatch-red' : 'hatch'})"/>`);
      const zx = p.x1;
      svg.push(`<path class="edge" d="M${zx} ${top} H${p.x0} V${top + BAR_PX} H${zx}"/>`);
      svg.push(`<path class="zig" d="M${zx} ${top} l-4 5 l4 5 l-4 5 l4 5"/>`);
    } else {
      svg.push(`<rect class="body" x="${p.x0}" y="${top}" width="${w}" height="${BAR_PX}" rx="3"/>`);
    }
    const fit = Math.floor((w - 10) / CHAR_PX);
    const shown = clip(full, Math.min(fit, LABEL_MAX_CHARS));
    if (shown !== '') svg.push(`<text class="label" x="${p.x0 + 5}" y="${top + BAR_PX / 2 + 4}">${escapeHtml(shown)}</text>`);
    svg.push('</g>');
  }
  // Crash lines over everything, labels staggered on two rows above the lanes.
  crashes.forEach((c, i) => {
    const cx = x(rank.get(c.time)!);
    const ly = i % 2 === 0 ? 18 : 36;
    svg.push(`<g class="crash"><title>${escapeHtml(`${c.label} at t=${fmtTime(c.time)}`)}</title>`);
    svg.push(`<line x1="${cx}" y1="${ly + 4}" x2="${cx}" y2="${lanesBottom}"/>`);
    svg.push(`<text x="${cx + 4}" y="${ly}">⚡ ${escapeHtml(c.label)}</text></g>`);
  });
  svg.push('</svg>');

  const rows = placed
    .slice()
    .sort((a, b) => a.op.call - b.op.call || a.index - b.index)
    .map(
      (p) =>
        `<tr${p.op.highlight ? ' class="hl"' : ''}><td>${p.index}</td><td>${escapeHtml(laneName(p.op.client))}</td><td>${p.op.node ?? ''}</td><td>${escapeHtml(fmtTime(p.op.call))}</td><td>${p.op.ret === undefined ? 'cut' : escapeHtml(fmtTime(p.op.ret))}</td><td><code>${escapeHtml(p.op.label)}</code></td></tr>`,
    )
    .join('\n');
  const crashRows = crashes.map((c) => `<li><code>t=${escapeHtml(fmtTime(c.time))}</code> ${escapeHtml(c.label)}</li>`).join('\n');

  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(input.title)}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 20px; color: #1d2430; }
h1 { font-size: 20px; margin: 0 0 8px; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 0 0 12px; }
dt { color: #5a6575; } dd { margin: 0; }
.kind { color: #b42318; font-weight: 600; }
pre { background: #f4f6f9; border: 1px solid #d8dee6; padding: 8px 10px; margin: 0; white-space: pre-wrap; word-break: break-all; }
.legend { margin: 10px 0; font-size: 13px; color: #3b4452; }
.legend span { display: inline-block; margin-right: 16px; }
.sw { display: inline-block; width: 26px; height: 12px; vertical-align: -1px; margin-right: 5px; border: 1.5px solid #4a6a8f; background: #dbe7f5; border-radius: 2px; }
.sw.hl { border-color: #c0262d; background: #fbd5d5; }
.sw.cut { background: repeating-linear-gradient(45deg, #eef2f7 0 3px, #8aa0b8 3px 5px); border-right: none; }
.sw.crash { width: 0; border: none; border-left: 2px dashed #d97706; height: 14px; }
.scroll { overflow-x: auto; border: 1px solid #d8dee6; background: #fff; }
svg { display: block; font: 12px ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
svg .lane { fill: #ffffff; } svg .lane.odd { fill: #f6f8fb; } svg .lane.recovery { fill: #f3f0fa; }
svg .lane-name { font: 600 13px system-ui, sans-serif; fill: #3b4452; }
svg .grid { stroke: #e6eaf0; stroke-width: 1; }
svg .axis { stroke: #8893a2; stroke-width: 1; }
svg .tick { fill: #5a6575; font-size: 11px; }
svg .op .body { fill: #dbe7f5; stroke: #4a6a8f; stroke-width: 1.5; }
svg .op.cut .body { stroke: none; fill: url(#hatch); }
svg .op .edge, svg .op .zig { fill: none; stroke: #4a6a8f; stroke-width: 1.5; }
svg .op.cut .zig { stroke-dasharray: 2 2; }
svg .op.hl .body { fill: #fbd5d5; stroke: #c0262d; stroke-width: 2; }
svg .op.hl.cut .body { stroke: none; fill: url(#hatch-red); }
svg .op.hl .edge, svg .op.hl .zig { stroke: #c0262d; stroke-width: 2; }
svg .op .label { fill: #1d2430; }
svg .op.hl .label { fill: #8a1016; font-weight: 700; }
svg .crash line { stroke: #d97706; stroke-width: 2; stroke-dasharray: 6 4; }
svg .crash text { fill: #b45309; font: 600 12px system-ui, sans-serif; }
table { border-collapse: collapse; margin-top: 14px; font-size: 13px; }
th, td { border-bottom: 1px solid #e6eaf0; padding: 3px 10px; text-align: left; }
tr.hl td { background: #fdecec; color: #8a1016; }
details { margin-top: 12px; }
</style>
</head>
<body>
<h1>${escapeHtml(input.title)}</h1>
<dl>
<dt>app</dt><dd>${escapeHtml(input.app)}</dd>
<dt>seed</dt><dd><code>${escapeHtml(String(input.seed))}</code></dd>
<dt>violation</dt><dd class="kind">${escapeHtml(input.violation.kind)}</dd>
<dt>detail</dt><dd>${escapeHtml(input.violation.detail)}</dd>
<dt>operations</dt><dd>${ops.length} (${ops.filter((o) => o.highlight).length} named by the checker, ${ops.filter((o) => o.ret === undefined).length} cut by a crash); ${crashes.length} crash${crashes.length === 1 ? '' : 'es'}</dd>
</dl>
<div>replay:</div>
<pre>${escapeHtml(input.replay)}</pre>
<div class="legend"><span><i class="sw"></i>operation, call → return</span><span><i class="sw hl"></i>named by the checker</span><span><i class="sw cut"></i>cut by a crash (outcome unknown)</span><span><i class="sw crash"></i>crash point</span><span>time axis: event order, ticks show logical time; hover a bar for details</span></div>
<div class="scroll">
${svg.join('\n')}
</div>
<details open><summary>operations (${ops.length})</summary>
<table><thead><tr><th>#</th><th>lane</th><th>node</th><th>call</th><th>return</th><th>operation</th></tr></thead>
<tbody>
${rows}
</tbody></table>
</details>
${crashes.length ? `<details open><summary>crashes (${crashes.length})</summary><ul>\n${crashRows}\n</ul></details>` : ''}
</body>
</html>
`;
}

/** Renders the page and writes it to `path` (UTF-8). Returns the path. */
export function writeTimeline(path: string, input: TimelineInput): string {
  writeFileSync(path, renderTimelineHtml(input), 'utf8');
  return path;
}
