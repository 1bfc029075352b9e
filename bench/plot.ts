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

/** One bar: its group on the x axis, its series (colour) within the group, its height. */
export interface Bar {
  group: string;
  series: string;
  value: number;
}

/** A horizontal line across the plot, such as a target. */
export interface Rule {
  value: number;
  label: string;
}

export interface BarOptions {
  title: string;
  yTitle: string;
  bars: Bar[];
  /** A log scale for values spanning orders of magnitude (all values must be > 0). */
  logScale?: boolean;
  rules?: Rule[];
}

/** Bars grouped on the x axis, one colour per series, the value printed above each bar. */
export function groupedBars({ title, yTitle, bars, logScale = false, rules = [] }: BarOptions): Vega.Spec {
  return {
    $schema: 'https://vega.github.io/schema/vega/v6.json',
    width: WIDTH,
    height: HEIGHT,
    padding: 10,
    title: { text: title, font: FONT },
    config: { axis: { labelFont: FONT, titleFont: FONT }, legend: { labelFont: FONT, titleFont: FONT } },
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
}

/** One line per series, with its points marked: curves such as time per item against scale. */
export function lines({ title, xTitle, yTitle, points, logX = false, logY = false, rules = [] }: LineOptions): Vega.Spec {
  return {
    $schema: 'https://vega.github.io/schema/vega/v6.json',
    width: WIDTH,
    height: HEIGHT,
    padding: 10,
    title: { text: title, font: FONT },
    config: { axis: { labelFont: FONT, titleFont: FONT }, legend: { labelFont: FONT, titleFont: FONT } },
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
      { orient: 'bottom', scale: 'x', title: xTitle, grid: true },
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
          {
            type: 'symbol',
            from: { data: 'series' },
            encode: { enter: { x: { scale: 'x', field: 'x' }, y: { scale: 'y', field: 'y' }, fill: { scale: 'colour', field: 'series' }, size: { value: 30 } } },
          },
        ],
      },
      ...ruleMarks(),
    ],
  } as Vega.Spec;
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
          x: { signal: 'width' },
          y: { scale: 'y', field: 'value', offset: -4 },
          text: { field: 'label' },
          align: { value: 'right' },
          fontSize: { value: 10 },
          fill: { value: '#555' },
          font: { value: FONT },
        },
      },
    },
  ];
}
