import { msNumberToTs } from '@temporalio/common/lib/time';
import {
  MAX_DURATION_MS,
  MAX_ID_BYTES,
  MAX_INT32,
  checkActivityId,
  checkActivityOptions,
  checkDurationMs,
  checkRetryPolicy,
  formatDurationMs,
  utf8Length,
} from '../../src/plan-format/limits';

const fields = (problems: { field: string }[]) => problems.map((p) => p.field);

describe('limits', () => {
  test('durations are finite, at least 1ms and at most 10 years', () => {
    expect(checkDurationMs(1, 'timeout')).toEqual([]);
    expect(checkDurationMs(MAX_DURATION_MS, 'timeout')).toEqual([]);
    expect(checkDurationMs(0, 'timeout')).toEqual([{ field: 'timeout', message: '0ms is too short: use at least 1ms' }]);
    expect(checkDurationMs(0, 'duration', { allowZero: true })).toEqual([]);
    expect(checkDurationMs(0.0000001, 'timeout')).toHaveLength(1);
    expect(checkDurationMs(-5, 'timeout')).toHaveLength(1);
    expect(checkDurationMs(MAX_DURATION_MS + 1, 'timeout')[0].message).toContain('use at most 3650d');
    expect(checkDurationMs(Infinity, 'timeout')).toHaveLength(1);
    expect(checkDurationMs(NaN, 'timeout')).toEqual([{ field: 'timeout', message: 'is not a duration' }]);
  });

  test('the longest duration, even doubled three times, converts to a protobuf Duration exactly', () => {
    // msNumberToTs is what the SDK runs on every timeout; it throws on Infinity.
    expect(() => msNumberToTs(Infinity)).toThrow();
    const ts = msNumberToTs(MAX_DURATION_MS * 8);
    expect(ts.seconds!.toNumber() * 1000).toBe(MAX_DURATION_MS * 8);
    // The server caps durations at 250 years: 80 years stays below.
    expect(ts.seconds!.toNumber()).toBeLessThan(250 * 365 * 86_400);
  });

  test('retry policies: attempts in an int32, intervals in range and ordered, coefficient at least 1', () => {
    expect(checkRetryPolicy({ maximumAttempts: 0, initialInterval: 100, maximumInterval: 100, backoffCoefficient: 1 })).toEqual([]);
    expect(checkRetryPolicy({ maximumAttempts: MAX_INT32 })).toEqual([]);
    expect(fields(checkRetryPolicy({ maximumAttempts: MAX_INT32 + 1 }))).toEqual(['retry.maximumAttempts']);
    expect(fields(checkRetryPolicy({ maximumAttempts: 1.5 }))).toEqual(['retry.maximumAttempts']);
    expect(fields(checkRetryPolicy({ maximumAttempts: -1 }))).toEqual(['retry.maximumAttempts']);
    expect(fields(checkRetryPolicy({ initialInterval: 0 }))).toEqual(['retry.initialInterval']);
    expect(checkRetryPolicy({ initialInterval: 2000, maximumInterval: 1000 })).toEqual([
      { field: 'retry.maximumInterval', message: '1s is shorter than initialInterval (2s): Temporal refuses that' },
    ]);
    // Without initialInterval, Temporal's default of 1s applies.
    expect(fields(checkRetryPolicy({ maximumInterval: 500 }))).toEqual(['retry.maximumInterval']);
    expect(fields(checkRetryPolicy({ backoffCoefficient: 0.5 }))).toEqual(['retry.backoffCoefficient']);
    expect(fields(checkRetryPolicy({ backoffCoefficient: Infinity }, 'policy'))).toEqual(['policy.backoffCoefficient']);
  });

  test('activity ids are counted in UTF-8 bytes against the server limit', () => {
    expect(checkActivityId('a'.repeat(MAX_ID_BYTES))).toEqual([]);
    expect(checkActivityId('a'.repeat(MAX_ID_BYTES + 1))).toHaveLength(1);
    expect(checkActivityId('é'.repeat(MAX_ID_BYTES / 2 + 1))).toHaveLength(1);
    expect(checkActivityId('')).toHaveLength(1);
    for (const text of ['', 'abc', 'é', '€', '😀', 'a😀é€\u0000', '\ud800']) expect(utf8Length(text)).toBe(Buffer.byteLength(text));
  });

  test('activity options: the ones Temporal refuses, by field', () => {
    expect(checkActivityOptions({ activityId: 'enrich[2]#2', scheduleToCloseTimeout: 60_000, heartbeatTimeout: 10_000, retry: { maximumAttempts: 3 } })).toEqual([]);
    expect(fields(checkActivityOptions({}))).toEqual(['scheduleToCloseTimeout']);
    expect(
      fields(
        checkActivityOptions({
          activityId: 'x'.repeat(2000),
          scheduleToCloseTimeout: 0,
          startToCloseTimeout: Infinity,
          heartbeatTimeout: -1,
          retry: { maximumAttempts: 3e9, initialInterval: 5000, maximumInterval: 10, backoffCoefficient: NaN },
        }),
      ),
    ).toEqual([
      'activityId',
      'scheduleToCloseTimeout',
      'startToCloseTimeout',
      'heartbeatTimeout',
      'retry.maximumAttempts',
      'retry.maximumInterval',
      'retry.backoffCoefficient',
    ]);
  });

  test('durations print in their largest whole unit', () => {
    expect([0, 1, 1500, 30_000, 300_000, 7_200_000, MAX_DURATION_MS].map(formatDurationMs)).toEqual(['0ms', '1ms', '1500ms', '30s', '5m', '2h', '3650d']);
  });
});
