/** SVG charts from vega-lite specs, rendered headless by vega (no browser). */
import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';

export interface ChartSpec {
  /** File name stem: `<name>.svg`. */
  name: string;
  spec: TopLevelSpec;
}

export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
