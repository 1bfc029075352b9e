/**
 * Writes run parts into a fresh embedded analytics database and prints what the readers see, as
 * JSON. A process of its own: PGlite loads its WebAssembly by dynamic import, which jest refuses.
 * Usage: tsx test/support/analytics-probe.ts <dir> <another dir>
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { openAnalytics, withAnalytics } from '../../src/analytics/database';
import { spoolPart } from '../../src/analytics/spool';
import { writeRunPart } from '../../src/analytics/record';
import { estimateRun, readStats } from '../../src/analytics/stats';
import type { RunAnalyticsPart } from '../../src/analytics/types';
import { pricedPart } from '../../src/providers/prices';

function part(runId: string, more: Partial<RunAnalyticsPart> = {}): RunAnalyticsPart {
  return {
    workflowId: `wf-${runId}`,
    runId,
    plan: 'unit',
    status: 'completed',
    startedAt: '2026-11-23T10:00:00.000Z',
    endedAt: '2026-11-23T10:00:01.000Z',
    durationMs: 1000,
    steps: [],
    humanWaits: [{ step: 'a', kind: 'failure', outcome: 'answered', waitedMs: 1500 }],
    humanWaitsFrom: 0,
    final: true,
    ...more,
  };
}

async function main(): Promise<void> {
  const db = await openAnalytics({ kind: 'pglite', dir: process.argv[2] }, { create: true, waitMs: 5000 });
  if (!db) throw new Error('no database');
  try {
    const steps = Array.from({ length: 3 }, (_, i) => ({ id: `s${i}`, position: i, tool: 'shell', status: 'completed', attempts: 1, durationMs: 100 * (i + 1) }));
    // A run's first part, then its last one twice (an activity retried), then a failed run.
    await db.transaction((q) => writeRunPart(q, part('r1', { steps: steps.slice(0, 2), final: false })));
    const beforeLastPart = await readStats(db.query);
    await db.transaction((q) => writeRunPart(q, part('r1', { steps: steps.slice(2), humanWaits: [], humanWaitsFrom: 1 })));
    await db.transaction((q) => writeRunPart(q, part('r1', { steps: steps.slice(2), humanWaits: [], humanWaitsFrom: 1 })));
    await db.transaction((q) => writeRunPart(q, part('r2', { status: 'failed', durationMs: 300, steps: [{ id: 's0', position: 0, tool: 'shell', status: 'failed', attempts: 3 }] })));
    // Spend: agent and decide steps over two days, priced by the worker as it records them (one model has no price).
    const pricing = { prices: { 'openai:mini': { input: 0.15, output: 0.6, cachedInput: 0.075 } }, defaultModel: 'openai:big' };
    const agent = (id: string, model: string | undefined, inputTokens: number) => ({ id, position: 0, tool: id === 'pick' ? 'decide' : 'agent', status: 'completed', attempts: 1, ...(model && { model }), usage: { inputTokens, outputTokens: 100, cachedInputTokens: 400 } });
    const spent = (runId: string, day: string, steps: RunAnalyticsPart['steps']) =>
      db.transaction((q) => writeRunPart(q, pricedPart(part(runId, { plan: 'spend', endedAt: `${day}T10:00:01.000Z`, humanWaits: [], steps }), pricing)));
    await spent('p1', '2026-11-23', [agent('draft', 'openai:mini', 1000), agent('pick', undefined, 50)]);
    await spent('p2', '2026-11-24', [agent('draft', 'openai:mini', 2000), { id: 'shell', position: 1, tool: 'shell', status: 'completed', attempts: 1 }]);
    const result = {
      beforeLastPart,
      spend: (await readStats(db.query, { plan: 'spend' }))[0]?.spend,
      stats: await readStats(db.query, { plan: 'unit' }),
      estimate: await estimateRun(db.query, 'unit'),
      estimateOther: (await estimateRun(db.query, 'other')) ?? null,
    };
    process.stdout.write(JSON.stringify({ ...result, inbox: await inbox(process.argv[3]) }));
  } finally {
    await db.close();
  }
}

/** Parts left in the inbox of a database never opened, and a file that is not a part: a reader takes them in. */
async function inbox(dir: string) {
  await spoolPart(dir, part('s1', { plan: 'spooled', final: false, steps: [{ id: 'a', position: 0, tool: 'shell', status: 'completed', attempts: 1, durationMs: 5 }] }));
  await spoolPart(dir, part('s1', { plan: 'spooled', humanWaits: [], humanWaitsFrom: 1000, steps: [{ id: 'b', position: 1, tool: 'shell', status: 'completed', attempts: 1, durationMs: 7 }] }));
  // The activity retried: the same part again replaces its file.
  await spoolPart(dir, part('s1', { plan: 'spooled', humanWaits: [], humanWaitsFrom: 1000, steps: [{ id: 'b', position: 1, tool: 'shell', status: 'completed', attempts: 1, durationMs: 7 }] }));
  writeFileSync(path.join(dir, 'pending', 'garbage.json'), '{ not json');
  const pendingBefore = readdirSync(path.join(dir, 'pending')).sort();
  const warnings: string[] = [];
  const stats = await withAnalytics({ kind: 'pglite', dir }, { waitMs: 5000, warn: (m) => warnings.push(m) }, (q) => readStats(q));
  return {
    pendingBefore,
    stats,
    pendingAfter: readdirSync(path.join(dir, 'pending')),
    rejected: existsSync(path.join(dir, 'rejected')) ? readdirSync(path.join(dir, 'rejected')) : [],
    warnings,
  };
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
