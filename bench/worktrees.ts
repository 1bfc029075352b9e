/**
 * Workspaces: how long cadre takes to make a task's worktree, against plain `git worktree add`,
 * on a generated repository of 10,000 files; and how long the four code-navigation queries take
 * on this project's own source.
 *
 *   npm run bench        (no Temporal server needed: these are the activities' own functions)
 *
 * Prints one JSON object and writes it to bench/results/worktrees.json. The targets (ratio ≤ 1.2,
 * under 5 s) are reported, not enforced: wall times vary with the machine's load.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createWorktree } from '../src/git';
import { INLINE_OUTPUT_LIMITS, defaultToolSandbox } from '../src/activities/tools/context';
import { runTool } from '../src/activities/tools/run-tool';
import { PROJECT_QUERIES } from './project-queries';
import { resultsFile, runMain, writeResults } from './run-main';
import { scaled } from './scale';

const FILES = 10_000;
const REPETITIONS = scaled(5, 3);
const PROJECT_ROOT = path.resolve(__dirname, '..', '..');
const RESULTS_FILE = resultsFile('worktrees');

function log(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@localhost', ...args], { cwd, encoding: 'utf8' });
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

function generateRepository(home: string): string {
  const repo = path.join(home, 'repo');
  for (let i = 0; i < FILES; i++) {
    const dir = path.join(repo, `pkg${Math.floor(i / 100)}`);
    if (i % 100 === 0) mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, `file${i}.ts`), `export const value${i} = ${i};\n// ${'x'.repeat(i % 200)}\n`);
  }
  git(repo, 'init', '--quiet', '--initial-branch=main');
  git(repo, 'add', '.');
  git(repo, 'commit', '--quiet', '-m', 'generated');
  return repo;
}

async function timed<T>(work: () => Promise<T> | T): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

/** One query through the tool as a plan step runs it, on this project's checkout. */
function query(tool: string, params: Record<string, unknown>): Promise<unknown> {
  return runTool(tool, params, { workspace: PROJECT_ROOT, stepId: 'bench', attempt: 1, signal: new AbortController().signal, limits: INLINE_OUTPUT_LIMITS, sandbox: defaultToolSandbox() });
}

async function main(): Promise<void> {
  const home = mkdtempSync(path.join(os.tmpdir(), 'cadre-bench-worktrees-'));
  try {
    log(`generating a repository of ${FILES} files...`);
    const repo = generateRepository(home);
    const plainDir = path.join(home, 'plain');
    const baseDir = path.join(home, 'cadre');
    const plain: number[] = [];
    const cadre: number[] = [];
    for (let r = 0; r < REPETITIONS; r++) {
      // Alternate which goes first, so neither always finds git's caches warmer.
      const order = r % 2 === 0 ? ['plain', 'cadre'] : ['cadre', 'plain'];
      for (const kind of order) {
        if (kind === 'plain') plain.push(await timed(() => git(repo, 'worktree', 'add', '--quiet', '-b', `plain-${r}`, path.join(plainDir, `t${r}`), 'main')));
        else cadre.push(await timed(() => createWorktree({ repo, plan: 'bench', task: `t${r}`, baseDir })));
      }
      log(`rep ${r + 1}/${REPETITIONS}: plain ${round(plain[r])} ms, cadre ${round(cadre[r])} ms`);
    }
    const ratio = round(median(cadre) / median(plain), 3);

    // The first query builds the workspace's language service; the others find it warm (bench/code-navigation.ts measures both).
    log('navigation queries on this project (the first builds its language service)...');
    const navigation: Record<string, number> = {};
    for (const [name, { tool, params }] of Object.entries(PROJECT_QUERIES)) {
      navigation[name] = round(await timed(() => query(tool, params)));
      log(`${name}: ${navigation[name]} ms`);
    }
    const cadreMs = round(median(cadre));
    const report = {
      files: FILES,
      repetitions: REPETITIONS,
      worktreeAdd: { plainMsMedian: round(median(plain)), cadreMsMedian: cadreMs, plainMsAll: plain.map((v) => round(v)), cadreMsAll: cadre.map((v) => round(v)), ratio },
      navigationMs: navigation,
      targets: {
        ratio: { value: ratio, atMost: 1.2, met: ratio <= 1.2 },
        cadreMs: { value: cadreMs, atMost: 5000, met: cadreMs < 5000 },
      },
      node: process.version,
      date: new Date().toISOString(),
    };
    writeResults(RESULTS_FILE, report);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

runMain(main, log);
