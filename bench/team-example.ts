/**
 * Benchmark: the team's questions and the team example. (1) A scripted worker asks 30 different
 * questions one after another; each goes to a specialist child worker: the latency from the
 * question (the asker's workflow time) to the specialist starting on it (its first state move),
 * target < 1 s. (2) The wall time of examples/feature-team (architect, implementer and tester in
 * worktrees, a consultation, a review, two merges) over 5 runs after a warm-up, offline.
 *
 *   npm run bench        (TEMPORAL_ADDRESS=host:port to use an existing server)
 *
 * Prints one JSON object and writes it to bench/results/team-example.json; progress goes to stderr.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import YAML from 'yaml';
import { TEAM_DEMO_DIR } from '../src/client/demo';
import { loadPlan } from '../src/plan-format/load';
import type { CompiledPlan } from '../src/plan-format/types';
import { formatIssues, validatePlan } from '../src/plan-format/validate';
import { installConciseLogging } from '../src/worker/logging';
import { startBenchWorker } from './bench-worker';
import { analyticsSettled, resultsFile, runMain, writeResults } from './run-main';
import { scaled } from './scale';

const QUESTIONS = scaled(30, 10);
const EXAMPLE_RUNS = scaled(5, 2);
const TARGET_MS = 1000;
const RESULTS_FILE = resultsFile('team-example');

function log(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

const round = (value: number, digits = 1) => Number(value.toFixed(digits));
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

/** A worker that asks QUESTIONS different questions, each answered surely by a specialist. */
function questionsPlan(dir: string): CompiledPlan {
  const call = (name: string, args: Record<string, unknown>) => ({ reply: { toolCalls: [{ name, args }] } });
  const asker = [
    ...Array.from({ length: QUESTIONS }, (_, i) => call('ask_question', { question: `Question ${i + 1}: which module owns feature ${i + 1}?`, canBeAnsweredBy: 'architect' })),
    call('signal_state', { state: 'completing', reason: 'asked all', result: 'ok' }),
  ];
  writeFileSync(path.join(dir, 'asker.yaml'), YAML.stringify({ turns: asker }));
  writeFileSync(path.join(dir, 'specialist.yaml'), YAML.stringify({ turns: [call('signal_state', { state: 'completing', reason: 'answered', result: { answer: 'the core module', confidence: 0.9 } })] }));
  const yaml = `name: team-questions\nteam: { model: "scripted:specialist.yaml" }\nsteps:\n  - { id: asker, agent: { role: implementer, prompt: go, model: "scripted:asker.yaml", maxTurns: ${QUESTIONS + 5} } }\n`;
  const result = validatePlan(YAML.parse(yaml), { baseDir: dir });
  if (!result.ok) throw new Error(formatIssues(result.issues));
  return result.plan;
}

async function main(): Promise<void> {
  installConciseLogging('WARN');
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'cadre-bench-team-example-'));
  const { server, worker, client, taskQueue, connection } = await startBenchWorker('team-example', tmp, log);
  try {
    const run = async (plan: CompiledPlan, id: string) => {
      const t0 = performance.now();
      const { workflowId } = await client.start(plan, {}, { workflowId: `${id}-${process.pid}`, taskQueue });
      await client.client.workflow.getHandle(workflowId).result();
      const d = await client.diagnostics(workflowId);
      if (d.status !== 'completed') throw new Error(`${id} ended ${d.status}: ${d.reason ?? ''}`);
      return { d, wallMs: performance.now() - t0 };
    };
    const example = async (i: number) => {
      const ws = mkdtempSync(path.join(tmp, 'example-'));
      cpSync(TEAM_DEMO_DIR, ws, { recursive: true });
      return run(await loadPlan(path.join(ws, 'plan.yaml'), ws), `feature-team-${i}`);
    };

    const report = await worker.runUntil(
      (async () => {
        log('warm-up: the team example once');
        await example(0);
        await analyticsSettled(log);
        log(`${QUESTIONS} questions, each to a specialist`);
        const qdir = mkdtempSync(path.join(tmp, 'questions-'));
        const { d } = await run(questionsPlan(qdir), 'team-questions');
        const latencies = (d.consultations ?? []).map((c) => Date.parse(c.specialistStartedAt as string) - Date.parse(c.askedAt)).sort((a, b) => a - b);
        if (latencies.length !== QUESTIONS || latencies.some(Number.isNaN)) throw new Error(`expected ${QUESTIONS} consultations with start times, got ${JSON.stringify(d.consultations)}`);
        log(`the team example, ${EXAMPLE_RUNS} runs`);
        const walls: number[] = [];
        for (let i = 1; i <= EXAMPLE_RUNS; i++) walls.push((await example(i)).wallMs);
        walls.sort((a, b) => a - b);
        return {
          questionToSpecialistMs: { questions: QUESTIONS, p50: pct(latencies, 50), p90: pct(latencies, 90), max: latencies.at(-1), target: `< ${TARGET_MS} ms`, meetsTarget: (latencies.at(-1) ?? Infinity) < TARGET_MS },
          featureTeamWallSeconds: { runs: EXAMPLE_RUNS, median: round(pct(walls, 50) / 1000, 2), min: round(walls[0] / 1000, 2), max: round((walls.at(-1) as number) / 1000, 2) },
          server: server.address,
          node: process.version,
          date: new Date().toISOString(),
        };
      })(),
    );
    await client.close();
    await connection.close();
    writeResults(RESULTS_FILE, report);
  } finally {
    await server.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

runMain(main, log);
