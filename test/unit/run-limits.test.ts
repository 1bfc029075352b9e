/**
 * The pure parts of keeping a run within Temporal's per-run limits (docs/streaming.md, "What a run
 * can take"): how often a worker reports its moves, a run's limits and how `cadre status` shows
 * them, `CADRE_RUN_LIMITS`, the reader's cursor, the stream's previews, and readiness across
 * continue-as-new.
 */
import { reportSpacing } from '../../src/protocol/worker-state';
import { RUN_LIMITS, runLimits } from '../../src/plan-format/limits';
import { limitsLine } from '../../src/client/format';
import { runLimitsFromEnv } from '../../src/client/run-limits-env';
import { UsageError } from '../../src/errors/cadre-error';
import { type StreamCursor, advance, formatCursor, parseCursor, startCursor } from '../../src/streaming/reader';
import type { StreamEventAt } from '../../src/streaming/events';
import { TOOL_RESULT_PREVIEW_CHARS, previewArgs, toolResultPreview } from '../../src/protocol/stream';
import { Readiness } from '../../src/plan-format/readiness';

test("a worker's reports: two at once, then spaced out, a second at first, doubling every five up to fifteen minutes", () => {
  expect([0, 1, 2, 6, 7, 12, 17, 22, 27, 32, 37, 42, 47, 52, 1000].map(reportSpacing)).toEqual([
    0, 0, 1000, 1000, 2000, 4000, 8000, 16_000, 32_000, 64_000, 128_000, 256_000, 512_000, 900_000, 900_000,
  ]);
});

test('a worker that moves all day reports a number of times that grows with the log of how long it runs', () => {
  // Moves every 100 ms: the reports sent in a run of `hours`, each as soon as its spacing allows.
  const reports = (hours: number) => {
    let sent = 0;
    let last = -Infinity;
    for (let t = 0; t < hours * 3600_000; t += 100) {
      if (t - last >= reportSpacing(sent)) {
        sent++;
        last = t;
      }
    }
    return sent;
  };
  const [one, four, twentyFour] = [1, 4, 24].map(reports);
  expect(one).toBeLessThan(50);
  // Past the spacing's cap, four reports an hour: a day of 864,000 moves is about 200 signals, and
  // a team of twenty such workers stays under half of Temporal's 10,000 a run.
  expect(twentyFour - four).toBeLessThanOrEqual(20 * 4 + 1);
  expect(20 * twentyFour).toBeLessThan(5000);
});

test("a run's limits: Temporal's defaults, or a cluster's lower ones; nonsense is the default", () => {
  expect(runLimits()).toEqual(RUN_LIMITS);
  expect(runLimits({ signals: 1000, updates: 200.7 })).toEqual({ ...RUN_LIMITS, signals: 1000, updates: 200 });
  expect(runLimits({ signals: 0, updates: -3, events: Number.NaN, bytes: '12' as unknown as number })).toEqual(RUN_LIMITS);
});

test('CADRE_RUN_LIMITS: limit=number pairs, and a clear error for anything else', () => {
  expect(runLimitsFromEnv({})).toBeUndefined();
  expect(runLimitsFromEnv({ CADRE_RUN_LIMITS: 'signals=1000, updates = 500' })).toEqual({ signals: 1000, updates: 500 });
  for (const bad of ['signals', 'signals=0', 'signals=1.5', 'messages=10', 'signals=ten']) {
    expect(() => runLimitsFromEnv({ CADRE_RUN_LIMITS: bad })).toThrow(UsageError);
  }
  expect(() => runLimitsFromEnv({ CADRE_RUN_LIMITS: 'messages=10' })).toThrow(/limits: signals, updates, events, bytes/);
});

test('`cadre status` shows the limits once any is past half, against what the run keeps within', () => {
  const usage = { signals: 4000, updates: 10, polls: 0, events: 900, bytes: 10_000 };
  expect(limitsLine({ limits: usage })).toBeUndefined();
  expect(limitsLine({ limits: { ...usage, signals: 5210, updates: 1500 } })).toBe(
    "  limits: 5,210 of 10,000 signals (52%), 1,500 of 2,000 updates (75%): Temporal's per-run limits, see docs/streaming.md",
  );
  expect(limitsLine({ limits: { ...usage, max: { ...RUN_LIMITS, signals: 5000 } }, continuedAsNew: 2 })).toBe(
    "  limits: 4,000 of 5,000 signals (80%) (this run; it continued as new 2 times): Temporal's per-run limits, see docs/streaming.md",
  );
});

test("a reader's cursor: the run's offset, and each open agent stream's; it resumes after the last event read", () => {
  const at = 1;
  const events: StreamEventAt[] = [
    { type: 'step_started', step: 'write', kind: 'agent', at, offset: 7 },
    { type: 'agent_started', step: 'write', workflowId: 'run/write', kind: 'agent', at, offset: 8 },
    { type: 'message_start', step: 'write', turn: 1, attempt: 1, at, offset: 0, stream: 'run/write' },
    { type: 'text_delta', step: 'write', turn: 1, attempt: 1, text: 'hi', at, offset: 1, stream: 'run/write' },
  ];
  const cursor = startCursor(7);
  for (const e of events) advance(cursor, e);
  expect(cursor).toEqual({ from: 9, streams: { 'run/write': 2 } });
  expect(parseCursor(formatCursor(cursor))).toEqual(cursor);
  advance(cursor, { type: 'agent_ended', step: 'write', status: 'completed', at, offset: 2, stream: 'run/write' });
  expect(cursor).toEqual({ from: 9, streams: {} });
  // An agent id may hold `=` and `/`: the offset is after the last `=`.
  expect(parseCursor(['12', 'plan-a=b/x[2]=40'])).toEqual({ from: 12, streams: { 'plan-a=b/x[2]': 40 } } satisfies StreamCursor);
  for (const bad of [['x'], ['-1'], ['a=b'], ['=4'], ['1.5']]) expect(parseCursor(bad)).toBeUndefined();
});

test('previews in the stream: long arguments and results cut, saying how much was left out', () => {
  const long = 'x'.repeat(TOOL_RESULT_PREVIEW_CHARS + 10);
  expect(previewArgs({ path: 'a.txt' })).toEqual({ path: 'a.txt' });
  expect(previewArgs({ content: long, nested: [{ more: long }] })).toEqual({
    content: `${'x'.repeat(TOOL_RESULT_PREVIEW_CHARS)}… (10 more characters)`,
    nested: [{ more: `${'x'.repeat(TOOL_RESULT_PREVIEW_CHARS)}… (10 more characters)` }],
  });
  expect(toolResultPreview({ output: { ok: true } })).toEqual({ preview: '{"ok":true}' });
  expect(toolResultPreview({ output: long })).toEqual({ preview: 'x'.repeat(TOOL_RESULT_PREVIEW_CHARS), truncatedFrom: long.length });
  expect(toolResultPreview({ error: 'ToolFailed: no' })).toEqual({ isError: true, preview: 'ToolFailed: no' });
});

test('readiness across continue-as-new: steps a run before ran are never ready again, their dependents are', () => {
  const steps = [
    { id: 'a', needs: [] },
    { id: 'b', needs: ['a'] },
    { id: 'c', needs: ['b'] },
    { id: 'd', needs: [] },
  ];
  const readiness = new Readiness(steps);
  for (const done of ['a', 'b']) readiness.finished(done);
  readiness.satisfied('a');
  readiness.satisfied('b');
  expect(readiness.take()).toEqual(['c', 'd']);
  expect(readiness.take()).toEqual([]);
});
