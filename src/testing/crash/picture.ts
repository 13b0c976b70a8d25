/**
 * A picture of a violation (DESIGN §8, issue 10 item 7): an app's checker attaches to a problem a
 * lazy `picture` — the operations of the shortest failing history it can name and the crash line —
 * and the explorer run's wrapper (distinct.ts) turns the pictures of the reported violations into
 * timeline inputs (src/testing/timeline), with the seed and the replay command. `pmrpc crash-test
 * --timeline DIR` writes one self-contained HTML page per violation.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { AppProblem } from '../../apps/index.js';
import { writeTimeline, type TimelineCrash, type TimelineInput, type TimelineOperation } from '../timeline/index.js';
import type { ExplorerViolation } from './explorer.js';

/** What an app can draw of a failing check. */
export interface Picture {
  operations: TimelineOperation[];
  crashes: TimelineCrash[];
}

/** A problem with an optional picture (built only if the problem is reported as a violation). */
export type PicturedProblem = AppProblem & { picture?: () => Picture };

/** A violation with the input of its timeline, when its app could draw it. */
export type PicturedViolation = ExplorerViolation & { timeline?: TimelineInput };

/** The timeline input of a violation from its picture. */
export function timelineInput(v: ExplorerViolation, app: string, seed: number, p: Picture): TimelineInput {
  return {
    title: `${app}: ${v.kind} at crash point ${v.point}${v.image === undefined ? '' : `, image ${v.image}`}${v.phase === 'nested' ? ' (crashed again during recovery)' : ''}`,
    app,
    seed,
    replay: v.replay,
    violation: { kind: v.kind, detail: v.detail },
    operations: p.operations,
    // The app knows when it crashed, the explorer where: a crash line names its crash point and image.
    crashes: p.crashes.map((c) => (c.label === 'crash' ? { ...c, label: `crash: point ${v.point}${v.image === undefined ? '' : `, image ${v.image}`}` } : c)),
  };
}

/**
 * Writes the timeline of each of the first `max` violations that have one into `dir` (created),
 * named `<app>-seed<seed>-point<point>-<i>.html`; returns the paths by violation index.
 */
export function writeViolationTimelines(violations: readonly PicturedViolation[], dir: string, max: number, seedOf: (v: PicturedViolation) => number = () => 0): Map<number, string> {
  const out = new Map<number, string>();
  mkdirSync(dir, { recursive: true });
  for (const [i, v] of violations.entries()) {
    if (out.size >= max) break;
    if (v.timeline === undefined) continue;
    const name = `${v.timeline.app}-seed${seedOf(v)}-point${v.point}-${i}.html`.replace(/[^A-Za-z0-9._-]/g, '_');
    out.set(i, writeTimeline(join(dir, name), v.timeline));
  }
  return out;
}
