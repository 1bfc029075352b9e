/**
 * Plots for the benchmarks: SVG files written next to their JSON results, drawn by Vega
 * (https://vega.github.io/vega/) rendering headless in Node (no browser; without the optional
 * `canvas` package text widths are estimated). A benchmark builds a spec with one of the helpers
 * below, or writes its own Vega spec, and calls `writePlot`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type * as Vega from 'vega';

// Vega is an ES module with top-level await. TypeScript compiles `import()` to `require()` for
// CommonJS, and `require()` cannot load such a module: this keeps a real dynamic import.
const importModule = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;

const WIDTH = 560;
const HEIGHT = 300;
const FONT = 'Helvetica, Arial, sans-serif';

/** The SVG text of a Vega spec. */
export async function renderSvg(spec: Vega.Spec): Promise<string> {
  const vega = (await importModule('vega')) as typeof Vega;
  const view = new vega.View(vega.parse(spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** Renders `spec` to `file` (an `.svg` path, usually `resultsFile(name)` with `.svg` for `.json`). */
export async function writePlot(file: string, spec: Vega.Spec): Promise<void> {
  const svg = await renderSvg(spec);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, svg);
}

/** Plots by the suffix of their file name: `{ '': spec, '-progress': spec }` for name.svg and name-progress.svg. */
export type Plots = Record<string, Vega.Spec>;

/** Writes each plot next to a benchmark's JSON results file (`name.json` → `name<suffix>.svg`). */
export async function writePlots(resultsJson: string, plots: Plots): Promise<void> {
  for (const [suffix, spec] of Object.entries(plots)) await writePlot(resultsJson.replace(/\.json$/, `${suffix}.svg`), spec);
}

/** One bar: its group on the x axis, its series (colour) within the group, its height. */
export interface Bar {
  group: string;
  series: string;
  value: number;
}

/** A horizontal line across the plot, such as a target; its label at the right end, or the left. */
export interface Rule {
  value: number;
  label: string;
  labelAtLeft?: boolean;
}

export interface BarOptions {
  title: string;
  yTitle: string;
  bars: Bar[];
  /** A log scale for values spanning orders of magnitude (all values must be > 0). */
  logScale?: boolean;
  rules?: Rule[];
}

/** What every plot shares: the schema, size, title and fonts. */
function frame(title: string) {
  return {
    $schema: 'https://vega.github.io/schema/vega/v6.json',
    width: WIDTH,
    height: HEIGHT,
    padding: 10,
    title: { text: title, font: FONT },
    config: { axis: { labelFont: FONT, titleFont: FONT }, legend: { labelFont: FONT, titleFont: FONT } },
  };
}

/** Bars grouped on the x axis, one colour per series, the value printed above each bar. */
export function groupedBars({ title, yTitle, bars, logScale = false, rules = [] }: BarOptions): Vega.Spec {
  return {
    ...frame(title),
    data: [
      { name: 'bars', values: bars },
      { name: 'rules', values: rules },
    ],
    scales: [
      { name: 'x', type: 'band', domain: { data: 'bars', field: 'group' }, range: 'width', padding: 0.2 },
      {
        name: 'y',
        type: logScale ? 'log' : 'linear',
        domain: { fields: [{ data: 'bars', field: 'value' }, { data: 'rules', field: 'value' }] },
        range: 'height',
        nice: true,
        zero: !logScale,
      },
      { name: 'colour', type: 'ordinal', domain: { data: 'bars', field: 'series' }, range: 'category' },
    ],
    axes: [
      { orient: 'bottom', scale: 'x', labelAngle: -20, labelAlign: 'right' },
      { orient: 'left', scale: 'y', title: yTitle, grid: true },
    ],
    legends: [{ fill: 'colour', orient: 'right', labelLimit: 400 }],
    marks: [
      {
        type: 'group',
        from: { facet: { data: 'bars', name: 'facet', groupby: 'group' } },
        encode: { enter: { x: { scale: 'x', field: 'group' }, width: { scale: 'x', band: 1 } } },
        // Within a group, `width` is the group's band: the inner scale spreads the series over it.
        signals: [{ name: 'width', update: "bandwidth('x')" }],
        scales: [{ name: 'inner', type: 'band', range: 'width', domain: { data: 'facet', field: 'series' } }],
        marks: [
          {
            type: 'rect',
            from: { data: 'facet' },
            encode: {
              enter: {
                x: { scale: 'inner', field: 'series' },
                width: { scale: 'inner', band: 1 },
                y: { scale: 'y', field: 'value' },
                y2: { signal: 'height' },
                fill: { scale: 'colour', field: 'series' },
                tooltip: { signal: "datum.series + ': ' + datum.value" },
              },
            },
          },
          {
            type: 'text',
            from: { data: 'facet' },
            encode: {
              enter: {
                x: { scale: 'inner', field: 'series', band: 0.5 },
                y: { scale: 'y', field: 'value', offset: -3 },
                text: { signal: "format(datum.value, datum.value < 10 ? '.2~f' : ',.0f')" },
                align: { value: 'center' },
                fontSize: { value: 9 },
                font: { value: FONT },
              },
            },
          },
        ],
      },
      ...ruleMarks(),
    ],
  } as Vega.Spec;
}

/** One point of a line: its series (colour), x and y. */
export interface Point {
  series: string;
  x: number;
  y: number;
}

export interface LineOptions {
  title: string;
  xTitle: string;
  yTitle: string;
  points: Point[];
  logX?: boolean;
  logY?: boolean;
  rules?: Rule[];
  /** Mark each point (default); off for dense curves, where the marks would hide the line. */
  symbols?: boolean;
}

/** One line per series, with its points marked: curves such as time per item against scale. */
export function lines({ title, xTitle, yTitle, points, logX = false, logY = false, rules = [], symbols = true }: LineOptions): Vega.Spec {
  return {
    ...frame(title),
    data: [
      { name: 'points', values: points },
      { name: 'rules', values: rules },
    ],
    scales: [
      { name: 'x', type: logX ? 'log' : 'linear', domain: { data: 'points', field: 'x' }, range: 'width', nice: true, zero: false },
      { name: 'y', type: logY ? 'log' : 'linear', domain: { fields: [{ data: 'points', field: 'y' }, { data: 'rules', field: 'value' }] }, range: 'height', nice: true, zero: !logY },
      { name: 'colour', type: 'ordinal', domain: { data: 'points', field: 'series' }, range: 'category' },
    ],
    axes: [
      // Log scales tick at 2, 3, 4, 5...: drop labels that would overlap.
      { orient: 'bottom', scale: 'x', title: xTitle, grid: true, labelOverlap: 'greedy' },
      { orient: 'left', scale: 'y', title: yTitle, grid: true },
    ],
    legends: [{ stroke: 'colour', orient: 'right', labelLimit: 400 }],
    marks: [
      {
        type: 'group',
        from: { facet: { data: 'points', name: 'series', groupby: 'series' } },
        marks: [
          {
            type: 'line',
            from: { data: 'series' },
            sort: { field: 'datum.x' },
            encode: { enter: { x: { scale: 'x', field: 'x' }, y: { scale: 'y', field: 'y' }, stroke: { scale: 'colour', field: 'series' }, strokeWidth: { value: 2 } } },
          },
          ...(symbols
            ? [
                {
                  type: 'symbol',
                  from: { data: 'series' },
                  encode: { enter: { x: { scale: 'x', field: 'x' }, y: { scale: 'y', field: 'y' }, fill: { scale: 'colour', field: 'series' }, size: { value: 30 } } },
                },
              ]
            : []),
        ],
      },
      ...ruleMarks(),
    ],
  } as Vega.Spec;
}

const LOG_FLOOR = 0.1;

export interface DistributionOptions {
  title: string;
  /** What was measured, with its unit: the x axis. */
  xTitle: string;
  /** The measured values of each series (e.g. latencies in ms). */
  series: Record<string, number[]>;
  logX?: boolean;
  /** Vertical lines, such as a target. */
  marks?: Rule[];
}

/**
 * Latency distributions: for each series, the share of values at or below x (an empirical CDF,
 * drawn through its percentiles 0–100 and 99.9, so a series of any length is ~100 points).
 * Medians and tails of several series read off one plot: p50 where a curve crosses 0.5, p99 near the top.
 * On a log scale, values below LOG_FLOOR are drawn at it.
 */
export function distribution({ title, xTitle, series, logX = false, marks = [] }: DistributionOptions): Vega.Spec {
  const points: Point[] = [];
  for (const [name, values] of Object.entries(series)) {
    const sorted = [...values].sort((a, b) => a - b);
    if (sorted.length === 0) continue;
    for (const p of [...Array.from({ length: 101 }, (_, i) => i), 99.9]) {
      const at = sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
      points.push({ series: name, x: logX ? Math.max(at, LOG_FLOOR) : at, y: p / 100 });
    }
  }
  const spec = lines({ title, xTitle: logX ? `${xTitle} (log scale)` : xTitle, yTitle: 'share of values at or below', points, logX, symbols: false });
  const base = spec as { data: { name: string; values: unknown[] }[]; marks: unknown[]; scales: { name: string; domain: unknown }[] };
  base.data.push({ name: 'marks', values: marks });
  base.scales[0].domain = { fields: [{ data: 'points', field: 'x' }, { data: 'marks', field: 'value' }] };
  base.marks.push(
    {
      type: 'rule',
      from: { data: 'marks' },
      encode: { enter: { x: { scale: 'x', field: 'value' }, y: { value: 0 }, y2: { signal: 'height' }, stroke: { value: '#888' }, strokeDash: { value: [4, 4] } } },
    },
    {
      type: 'text',
      from: { data: 'marks' },
      encode: { enter: { x: { scale: 'x', field: 'value', offset: 3 }, y: { value: 10 }, text: { field: 'label' }, fontSize: { value: 10 }, fill: { value: '#555' }, font: { value: FONT } } },
    },
  );
  return spec;
}

/** Dashed horizontal lines from the `rules` data set, labelled at their right end. */
function ruleMarks(): Vega.Mark[] {
  return [
    {
      type: 'rule',
      from: { data: 'rules' },
      encode: { enter: { x: { value: 0 }, x2: { signal: 'width' }, y: { scale: 'y', field: 'value' }, stroke: { value: '#888' }, strokeDash: { value: [4, 4] } } },
    },
    {
      type: 'text',
      from: { data: 'rules' },
      encode: {
        enter: {
          x: { signal: 'datum.labelAtLeft ? 4 : width' },
          y: { scale: 'y', field: 'value', offset: -4 },
          text: { field: 'label' },
          align: { signal: "datum.labelAtLeft ? 'left' : 'right'" },
          fontSize: { value: 10 },
          fill: { value: '#555' },
          font: { value: FONT },
        },
      },
    },
  ];
}
