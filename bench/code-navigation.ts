/**
 * Code navigation: each `code.*` tool, cold and warm, on a generated project of 2,000 TypeScript
 * files (50 directories of 40 files that import each other, a re-exported core, 20 classes
 * implementing one interface), through `runTool` as a plan step calls it.
 *
 *   npm run bench                                   (CI scale: 500 files, fewer calls)
 *   CADRE_BENCH=full node dist/bench/code-navigation.js   (the 2,000 files docs/benchmarks.md quotes)
 *   node dist/bench/code-navigation.js generate <dir>     (only the project, to profile by hand)
 *
 * - cold: the tool's first call in a fresh worker process (the tools' thread started and TypeScript
 *   loaded in it, as an agent's toolset starts it; nothing parsed yet), against TypeScript alone
 *   building the same program and checker, and once with the DOM's declarations in the lib; beside
 *   it, the thread's start (TypeScript from its code cache, which this run's first start finds
 *   empty and writes) and the longest the main thread was held up (it runs the worker's
 *   activities; the tools' work is in their thread);
 * - an agent's first call: its toolset made with the workspace (which builds the service in the
 *   tools' thread while the model takes its first turn), a turn as long as the build, then the call;
 * - warm: later calls on the unchanged project, interleaved (each round calls each tool once);
 * - after a change: a call after a file was edited (by a plain write, as a command would), added
 *   or removed, with the answer checked to show the change;
 * - memory: heap and RSS of a process holding the warm service, against the same process before
 *   its first call and after the service was evicted (in a child run with --expose-gc).
 *
 * Prints one JSON object, writes it to bench/results/code-navigation.json and a plot of cold
 * against warm calls to bench/results/code-navigation.svg. The targets (first call ≤ 1.5 s, warm
 * p95 ≤ 100 ms) are reported, not enforced: wall times vary with the machine's load.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { MockActivityEnvironment } from '@temporalio/testing';
import ts from 'typescript';
import { INLINE_OUTPUT_LIMITS, defaultToolSandbox } from '../src/activities/tools/context';
import { runTool } from '../src/activities/tools/run-tool';
import { JSDOC_PARSING } from '../src/activities/tools/code/service-host';
import { createActivities } from '../src/activities';
import type { CodeCacheUse } from '../src/activities/tools/code/compile-cache';
import { type CodeThreadState, codeThreadState, evictCodeThread, stopCodeThread } from '../src/activities/tools/code/thread';
import { groupedBars, writePlot } from './plot';
import { resultsFile, runMain, writeResults } from './run-main';
import { BENCH_SCALE, scaled } from './scale';

const FILES = scaled(2_000, 500);
/** As a Node project's (and cadre's own): without `lib`, TypeScript would add the DOM's 2 MB of declarations (measured apart). */
const TSCONFIG = { target: 'ES2022', module: 'commonjs', lib: ['ES2022'], strict: true };
const PER_DIR = 40;
const PLUGIN_EVERY = 100;
const WARM_ROUNDS = scaled(60, 10);
const COLD_REPETITIONS = scaled(3, 1);
const CHANGES = scaled(10, 2);
const RESULTS_FILE = resultsFile('code-navigation');
const COLD_TARGET_MS = 1_500;
const WARM_P95_TARGET_MS = 100;
/** Issue 38: the second query (the first warm round, right after the service was built) and the first after an edit. */
const SECOND_TARGET_MS = 100;
const AFTER_EDIT_TARGET_MS = 150;

function log(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
const dirOf = (i: number) => Math.floor(i / PER_DIR);
/** The directory whose shared function the queries ask about, and a file in it. */
const MID_DIR = dirOf(FILES / 2);
const MID_FILE = MID_DIR * PER_DIR + 7;

function generateProject(ws: string): void {
  const write = (file: string, text: string) => {
    mkdirSync(path.dirname(path.join(ws, file)), { recursive: true });
    writeFileSync(path.join(ws, file), text);
  };
  write('tsconfig.json', JSON.stringify({ compilerOptions: TSCONFIG }));
  write(
    'src/core/types.ts',
    'export interface Entity {\n  id: number;\n}\n\nexport interface Plugin {\n  name: string;\n  apply(x: number): number;\n}\n\nexport function compute(x: number): number {\n  return x * 2 + 1;\n}\n',
  );
  write('src/core/index.ts', "export { compute as calculate } from './types';\nexport type { Entity, Plugin } from './types';\n");
  for (let d = 0; d < FILES / PER_DIR; d++) {
    write(`src/m${d}/shared.ts`, `import { calculate } from '../core';\n\n/** What every file of m${d} builds on. */\nexport function shared${d}(x: number): number {\n  return calculate(x) + ${d};\n}\n`);
  }
  for (let i = 0; i < FILES; i++) {
    const d = dirOf(i);
    const j = i - 1;
    const plugin = i % PLUGIN_EVERY === 0;
    const lines = [
      `import type { Entity${plugin ? ', Plugin' : ''} } from '../core';`,
      `import { shared${d} } from './shared';`,
      ...(j >= 0 ? [`import { helper${j} } from '${dirOf(j) === d ? '.' : `../m${dirOf(j)}`}/f${j}';`] : []),
      '',
      `export interface Record${i} extends Entity {`,
      '  value: number;',
      '  label: string;',
      '}',
      '',
      `/** Step ${i} of the chain: its own part, then the one before. */`,
      `export function helper${i}(x: number): number {`,
      `  const base = shared${d}(x);`,
      `  return base + ${i % 7};`,
      '}',
      '',
      `export function pipeline${i}(input: number): number {`,
      `  const first = helper${i}(input);`,
      `  return ${j >= 0 ? `helper${j}(first)` : 'first'};`,
      '}',
      '',
      `export class Step${i}${plugin ? ' implements Plugin' : ''} {`,
      `  readonly name = 'step${i}';`,
      '  apply(x: number): number {',
      `    return pipeline${i}(x);`,
      '  }',
      '}',
      '',
      `export const record${i}: Record${i} = { id: ${i}, value: ${i * 3}, label: 'r${i}' };`,
      '',
    ];
    write(`src/m${d}/f${i}.ts`, lines.join('\n'));
  }
}

/** The five tools, each with a query on the generated project, and how many answers it gives. */
const QUERIES: Record<string, { tool: string; params: Record<string, unknown>; count: (out: Record<string, unknown>) => number }> = {
  navigate_imports: { tool: 'code.navigate_imports', params: { file: `src/m${MID_DIR}/shared.ts`, symbol: 'calculate' }, count: (o) => (o.chain as unknown[]).length },
  find_implementations: { tool: 'code.find_implementations', params: { typeName: 'Plugin' }, count: (o) => (o.implementations as unknown[]).length },
  find_references: { tool: 'code.find_references', params: { file: `src/m${MID_DIR}/shared.ts`, symbol: `shared${MID_DIR}` }, count: (o) => (o.references as unknown[]).length },
  trace_data_flow: {
    tool: 'code.trace_data_flow',
    params: { symbol: `helper${MID_FILE}`, file: `src/m${MID_DIR}/f${MID_FILE}.ts`, direction: 'both', maxDepth: 3 },
    count: (o) => (o.backward as unknown[]).length + (o.forward as unknown[]).length,
  },
  search: { tool: 'code.search', params: { text: `shared${MID_DIR}(` }, count: (o) => (o.matches as unknown[]).length },
};

function query(ws: string, name: string): Promise<Record<string, unknown>> {
  const { tool, params } = QUERIES[name];
  const signal = new AbortController().signal;
  return runTool(tool, params, { workspace: ws, stepId: 'bench', attempt: 1, signal, limits: INLINE_OUTPUT_LIMITS, sandbox: defaultToolSandbox() }) as Promise<Record<string, unknown>>;
}

/** The longest the main thread went without running a 5 ms timer, from now until `stop`: what a call held up the worker's activities. */
function mainThreadWatch(): { stop: () => number } {
  let last = performance.now();
  let longest = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 5);
  return {
    stop: () => {
      clearInterval(tick);
      return Math.max(longest, performance.now() - last);
    },
  };
}

/** Wall time, and this process's CPU time (all its threads), which the machine's other load inflates less. */
async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; cpuMs: number; value: T }> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  const value = await work();
  const used = process.cpuUsage(cpu);
  return { ms: performance.now() - start, cpuMs: (used.user + used.system) / 1000, value };
}

function percentiles(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
  return { n: sorted.length, p50: round(at(50)), p95: round(at(95)), max: round(sorted.at(-1)!) };
}

const MB = 1024 * 1024;

interface ColdCall {
  ms: number;
  cpuMs: number;
  count: number;
  threadStartMs: number;
  typescript: CodeThreadState['typescript'];
  mainThreadMaxGapMs: number;
}

/** In a child process: one cold call, or the memory figures. Prints JSON. */
async function child(mode: string, ws: string, name?: string): Promise<void> {
  if (mode === 'cold') {
    // The tools' thread started first, as an agent's toolset starts it while the model takes its turn (and as TypeScript
    // was loaded with the activities before the tools had a thread): the call builds the service, TypeScript is loaded.
    const thread = await timed(() => codeThreadState());
    const loop = mainThreadWatch();
    const { ms, cpuMs, value } = await timed(() => query(ws, name!));
    process.stdout.write(`${JSON.stringify({ ms, cpuMs, count: QUERIES[name!].count(value), threadStartMs: thread.ms, typescript: thread.value.typescript, mainThreadMaxGapMs: loop.stop() })}\n`);
    return;
  }
  if (mode === 'agent') {
    // An agent with code tools starting: its toolset is made, and the tools' thread builds the workspace's service while the
    // model takes its first turn, here a turn as long as the build. Then the agent's first call.
    const started = performance.now();
    // An activity, so in an activity's context (it heartbeats), as a worker would call it.
    await new MockActivityEnvironment().run(createActivities().agentToolset, { tools: [QUERIES[name!].tool], workspace: ws });
    let state = await codeThreadState();
    while (state.projects.length === 0 && performance.now() - started < 120_000) state = await codeThreadState();
    const readyMs = performance.now() - started;
    const loop = mainThreadWatch();
    const { ms, cpuMs, value } = await timed(() => query(ws, name!));
    process.stdout.write(`${JSON.stringify({ ms, cpuMs, count: QUERIES[name!].count(value), readyMs, mainThreadMaxGapMs: loop.stop() })}\n`);
    return;
  }
  if (mode === 'bare') {
    // TypeScript alone: the program and its checker over the same files, which the first call cannot beat.
    const files = execFileSync('find', [path.join(ws, 'src'), '-name', '*.ts'], { encoding: 'utf8' }).trim().split('\n');
    const { ms, cpuMs } = await timed(async () => {
      // No automatic @types: the compiler host would look for them from this process's directory, the service from the project's (which has none).
      const options = { ...ts.convertCompilerOptionsFromJson(TSCONFIG, ws).options, noEmit: true, types: [] };
      const host = ts.createCompilerHost(options);
      host.jsDocParsingMode = JSDOC_PARSING;
      ts.createProgram(files, options, host).getTypeChecker();
    });
    process.stdout.write(`${JSON.stringify({ ms, cpuMs })}\n`);
    return;
  }
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('the memory child needs --expose-gc');
  const settle = () => {
    for (let i = 0; i < 3; i++) gc();
    return process.memoryUsage();
  };
  // The service lives in the tools' thread: its heap there, against the thread's own with nothing warm; RSS is the whole process's.
  const before = settle();
  const idle = await codeThreadState(true);
  for (const q of Object.keys(QUERIES)) await query(ws, q);
  const held = await codeThreadState(true);
  const warm = settle();
  await evictCodeThread();
  const emptied = await codeThreadState(true);
  const evicted = settle();
  const process_ = (m: NodeJS.MemoryUsage) => ({ rssMB: round((m.rss - before.rss) / MB), mainHeapUsedMB: round((m.heapUsed - before.heapUsed) / MB) });
  process.stdout.write(
    `${JSON.stringify({
      warm: { heapUsedMB: round((held.heapUsed - idle.heapUsed) / MB), ...process_(warm) },
      afterEviction: { heapUsedMB: round((emptied.heapUsed - idle.heapUsed) / MB), ...process_(evicted) },
      threadHeapIdleMB: round(idle.heapUsed / MB),
      sourceChars: held.projects.reduce((s, p) => s + p.sourceChars, 0),
      services: held.projects.length,
    })}\n`,
  );
}

function inChild(args: string[]): Record<string, unknown> {
  const out = execFileSync(process.execPath, ['--expose-gc', process.argv[1], ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return JSON.parse(out.trim().split('\n').at(-1)!) as Record<string, unknown>;
}

/** A call after a change, whose answer must show it. */
async function afterChange(ws: string, change: () => void, name: string, expected: (count: number) => boolean, what: string): Promise<{ ms: number; cpuMs: number }> {
  change();
  const { ms, cpuMs, value } = await timed(() => query(ws, name));
  const count = QUERIES[name].count(value);
  if (!expected(count)) throw new Error(`after ${what}, ${name} gave ${count} answers`);
  return { ms, cpuMs };
}

async function main(): Promise<void> {
  const [mode, wsArg, name] = process.argv.slice(2);
  if (mode === 'cold' || mode === 'agent' || mode === 'bare' || mode === 'memory') return child(mode, wsArg, name);
  if (mode === 'generate') return generateProject(wsArg);
  const loadBefore = os.loadavg();
  const home = mkdtempSync(path.join(os.tmpdir(), 'cadre-bench-nav-'));
  const ws = path.join(home, 'ws');
  // A code cache of this run's own (children take the environment): its first cold call finds none, as on a machine's first.
  process.env.CADRE_CACHE_DIR = path.join(home, 'cache');
  try {
    const generating = performance.now();
    generateProject(ws);
    log(`generated ${FILES} files in ${round(performance.now() - generating, 0)} ms`);

    const cold: Record<string, number[]> = {};
    const coldCpu: Record<string, number[]> = {};
    const counts: Record<string, number> = {};
    const bare: number[] = [];
    const bareCpu: number[] = [];
    const threadStarts: number[] = [];
    const withThreadStart: number[] = [];
    const typescriptLoads: Partial<Record<CodeCacheUse, number[]>> = {};
    const threadStartsBy: Partial<Record<CodeCacheUse, number[]>> = {};
    const coldMainGaps: number[] = [];
    const agentFirst: Record<string, number[]> = {};
    const agentReady: number[] = [];
    for (let r = 0; r < COLD_REPETITIONS; r++) {
      for (const q of Object.keys(QUERIES)) {
        const { ms, cpuMs, count, threadStartMs, typescript, mainThreadMaxGapMs } = inChild(['cold', ws, q]) as unknown as ColdCall;
        (cold[q] ??= []).push(ms);
        (coldCpu[q] ??= []).push(cpuMs);
        threadStarts.push(threadStartMs);
        withThreadStart.push(threadStartMs + ms);
        (threadStartsBy[typescript.cache] ??= []).push(threadStartMs);
        (typescriptLoads[typescript.cache] ??= []).push(typescript.loadMs);
        coldMainGaps.push(mainThreadMaxGapMs);
        counts[q] = count;
        log(
          `cold ${q}: ${round(ms, 0)} ms, ${round(cpuMs, 0)} ms CPU (${count} answers; the tools' thread started in ${round(threadStartMs, 0)} ms, ` +
            `TypeScript's code cache ${typescript.cache}, loaded in ${round(typescript.loadMs, 0)} ms; main thread held up ${round(mainThreadMaxGapMs, 0)} ms at most)`,
        );
      }
      for (const q of Object.keys(QUERIES)) {
        const { ms, count, readyMs } = inChild(['agent', ws, q]) as { ms: number; count: number; readyMs: number };
        if (count !== counts[q]) throw new Error(`${q} after an agent's start gave ${count} answers, cold ${counts[q]}`);
        (agentFirst[q] ??= []).push(ms);
        agentReady.push(readyMs);
        log(`${q}, an agent's first call once its start built the service (in ${round(readyMs, 0)} ms): ${round(ms, 0)} ms`);
      }
      const baseline = inChild(['bare', ws]) as { ms: number; cpuMs: number };
      bare.push(baseline.ms);
      bareCpu.push(baseline.cpuMs);
      log(`TypeScript's program and checker alone: ${round(baseline.ms, 0)} ms, ${round(baseline.cpuMs, 0)} ms CPU`);
    }
    // At full scale, the same first call with TypeScript's default lib for the target, which includes the DOM's declarations.
    let withDom: { ms: number; cpuMs: number } | undefined;
    if (BENCH_SCALE === 'full') {
      writeFileSync(path.join(ws, 'tsconfig.json'), JSON.stringify({ compilerOptions: { ...TSCONFIG, lib: undefined } }));
      withDom = inChild(['cold', ws, 'find_references']) as { ms: number; cpuMs: number };
      writeFileSync(path.join(ws, 'tsconfig.json'), JSON.stringify({ compilerOptions: TSCONFIG }));
      log(`cold find_references with the DOM lib: ${round(withDom.ms, 0)} ms, ${round(withDom.cpuMs, 0)} ms CPU`);
    }

    const memory = inChild(['memory', ws]);
    log(`memory: ${JSON.stringify(memory)}`);

    // This process's first call builds the service; then rounds of warm calls, each tool once a round.
    const first = await timed(() => query(ws, 'find_references'));
    log(`first call in this process: ${round(first.ms, 0)} ms`);
    const warm: Record<string, number[]> = {};
    const warmCpu: Record<string, number[]> = {};
    const warmLoop = mainThreadWatch();
    for (let r = 0; r < WARM_ROUNDS; r++) {
      for (const q of Object.keys(QUERIES)) {
        const { ms, cpuMs, value } = await timed(() => query(ws, q));
        if (QUERIES[q].count(value) !== counts[q]) throw new Error(`warm ${q} gave ${QUERIES[q].count(value)} answers, cold ${counts[q]}`);
        (warm[q] ??= []).push(ms);
        (warmCpu[q] ??= []).push(cpuMs);
      }
    }

    const warmMainThreadMaxGapMs = warmLoop.stop();
    // The calls right after the one that built the service: what they still build shows here.
    const second = Object.fromEntries(Object.entries(warm).map(([q, v]) => [q, round(v[0])]));
    log(`second calls (the first warm round): ${JSON.stringify(second)}`);

    // Changes made as a command makes them (plain writes), each followed by a query that must see it.
    const refs = counts.find_references;
    const edited: { ms: number; cpuMs: number }[] = [];
    const added: { ms: number; cpuMs: number }[] = [];
    const removed: { ms: number; cpuMs: number }[] = [];
    for (let c = 0; c < CHANGES; c++) {
      const file = path.join(ws, 'src', `m${MID_DIR}`, `f${MID_DIR * PER_DIR + c}.ts`);
      edited.push(await afterChange(ws, () => appendFileSync(file, `export const again${c} = shared${MID_DIR}(${c});\n`), 'find_references', (n) => n === refs + c + 1, 'an edit'));
      const extra = path.join(ws, 'src', `m${MID_DIR}`, `extra${c}.ts`);
      const source = `import { shared${MID_DIR} } from './shared';\nexport const extra = shared${MID_DIR}(1);\n`;
      added.push(await afterChange(ws, () => writeFileSync(extra, source), 'find_references', (n) => n === refs + c + 3, 'a new file'));
      removed.push(await afterChange(ws, () => unlinkSync(extra), 'find_references', (n) => n === refs + c + 1, 'a removal'));
    }

    const report = {
      files: FILES,
      queries: Object.fromEntries(Object.entries(QUERIES).map(([q, { tool, params }]) => [q, { tool, params, answers: counts[q] }])),
      coldMs: Object.fromEntries(Object.entries(cold).map(([q, v]) => [q, percentiles(v)])),
      coldCpuMs: Object.fromEntries(Object.entries(coldCpu).map(([q, v]) => [q, percentiles(v)])),
      typescriptAloneMs: { wall: percentiles(bare), cpu: percentiles(bareCpu) },
      threadStartMs: percentiles(threadStarts),
      // By how TypeScript loaded in the thread: the first cold call of the run found no code cache (a machine's first), the others the one it wrote.
      threadStartMsByCodeCache: Object.fromEntries(Object.entries(threadStartsBy).map(([use, v]) => [use, percentiles(v)])),
      typescriptLoadMsByCodeCache: Object.fromEntries(Object.entries(typescriptLoads).map(([use, v]) => [use, percentiles(v)])),
      // A plan's first code step in a fresh worker: no agent started the thread ahead.
      coldWithThreadStartMs: percentiles(withThreadStart),
      agentFirstCallMs: Object.fromEntries(Object.entries(agentFirst).map(([q, v]) => [q, percentiles(v)])),
      agentServiceReadyMs: percentiles(agentReady),
      mainThreadMaxGapMs: { cold: percentiles(coldMainGaps), warmRounds: round(warmMainThreadMaxGapMs) },
      ...(withDom && { coldWithDomLibMs: { find_references: { wall: round(withDom.ms), cpu: round(withDom.cpuMs) } } }),
      secondCallMs: second,
      warmMs: Object.fromEntries(Object.entries(warm).map(([q, v]) => [q, percentiles(v)])),
      warmCpuMs: Object.fromEntries(Object.entries(warmCpu).map(([q, v]) => [q, percentiles(v)])),
      firstCallInBenchProcessMs: round(first.ms),
      afterChangeMs: { edit: percentiles(edited.map((t) => t.ms)), addFile: percentiles(added.map((t) => t.ms)), removeFile: percentiles(removed.map((t) => t.ms)) },
      afterChangeCpuMs: { edit: percentiles(edited.map((t) => t.cpuMs)), addFile: percentiles(added.map((t) => t.cpuMs)), removeFile: percentiles(removed.map((t) => t.cpuMs)) },
      memory,
      targets: {
        coldMs: { value: round(Math.max(...Object.values(cold).flat())), atMost: COLD_TARGET_MS, met: Math.max(...Object.values(cold).flat()) <= COLD_TARGET_MS },
        warmP95Ms: { value: Math.max(...Object.values(warm).map((v) => percentiles(v).p95)), atMost: WARM_P95_TARGET_MS, met: Object.values(warm).every((v) => percentiles(v).p95 <= WARM_P95_TARGET_MS) },
        secondCallMs: { value: Math.max(...Object.values(second)), atMost: SECOND_TARGET_MS, met: Math.max(...Object.values(second)) <= SECOND_TARGET_MS },
        afterEditMs: { value: round(Math.max(...edited.map((t) => t.ms))), of: 'the slowest query after an edit', atMost: AFTER_EDIT_TARGET_MS, met: Math.max(...edited.map((t) => t.ms)) <= AFTER_EDIT_TARGET_MS },
      },
      machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, memoryGB: round(os.totalmem() / 1024 ** 3), loadAverageBefore: loadBefore.map((l) => round(l, 2)), loadAverageAfter: os.loadavg().map((l) => round(l, 2)) },
      node: process.version,
      date: new Date().toISOString(),
    };
    writeResults(RESULTS_FILE, report);
    // Wall time is what a caller waits; CPU time shows what the machine's other load added to it.
    const bars = Object.keys(QUERIES).flatMap((q) => [
      { group: q, series: 'first call (max)', value: round(Math.max(...cold[q]), 0) },
      { group: q, series: 'first call, CPU (max)', value: round(Math.max(...coldCpu[q]), 0) },
      { group: q, series: 'warm p50', value: report.warmMs[q].p50 },
      { group: q, series: 'warm p95', value: report.warmMs[q].p95 },
      { group: q, series: 'warm p95, CPU', value: report.warmCpuMs[q].p95 },
    ]);
    await writePlot(RESULTS_FILE.replace(/\.json$/, '.svg'), groupedBars({
      title: `code.* on ${FILES.toLocaleString('en')} TypeScript files: first call vs warm calls (load average ${round(loadBefore[0], 1)})`,
      yTitle: 'ms per call (log scale)',
      bars,
      logScale: true,
      rules: [
        { value: COLD_TARGET_MS, label: `first call target ${COLD_TARGET_MS} ms` },
        { value: WARM_P95_TARGET_MS, label: `warm p95 target ${WARM_P95_TARGET_MS} ms` },
      ],
    }));
  } finally {
    await stopCodeThread();
    rmSync(home, { recursive: true, force: true });
  }
}

runMain(main, log);
