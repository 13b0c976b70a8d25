/** SVG charts from vega-lite specs, rendered headless by vega (no browser). */
import type { TopLevelSpec } from 'vega-lite';

export interface ChartSpec {
  /** File name stem: `<name>.svg`. */
  name: string;
  spec: TopLevelSpec;
}

export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  // Loaded on first use: vega is most of the CLI's start-up time, and only a bench run draws.
  const [vega, { compile }] = await Promise.all([import('vega'), import('vega-lite')]);
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** A log-scale line chart of ops/s against payload size, one line per series. */
export function opsBySizeChart(name: string, title: string, rows: Array<{ series: string; sizeBytes: number; opsPerSecond: number }>): ChartSpec {
  return {
    name,
    spec: {
      title,
      width: 480,
      height: 300,
      data: { values: rows },
      mark: { type: 'line', point: true },
      encoding: {
        x: { field: 'sizeBytes', type: 'quantitative', scale: { type: 'log', base: 2 }, title: 'payload (bytes)' },
        y: { field: 'opsPerSecond', type: 'quantitative', scale: { type: 'log' }, title: 'operations per second (median)' },
        color: { field: 'series', type: 'nominal', title: null },
      },
    },
  };
}

/**
 * A bar chart of `y` per category `x`; with `group`, bars of each category side by side, one
 * colour per group. Categories keep the order of the rows.
 */
export function barChart(
  name: string,
  title: string,
  rows: Array<Record<string, unknown>>,
  o: { x: string; y: string; yTitle: string; group?: string; width?: number; height?: number },
): ChartSpec {
  return {
    name,
    spec: {
      title,
      width: o.width ?? 480,
      height: o.height ?? 300,
      data: { values: rows },
      mark: 'bar',
      encoding: {
        x: { field: o.x, type: 'nominal', sort: null, title: null },
        ...(o.group !== undefined ? { xOffset: { field: o.group }, color: { field: o.group, type: 'nominal', title: null } } : {}),
        // Linear only: vega draws bars from 0, which a log scale cannot place (the bars vanish).
        y: { field: o.y, type: 'quantitative', title: o.yTitle },
      },
    },
  };
}
