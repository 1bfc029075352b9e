/**
 * Temporal's limits, and cadre's own, in one place, with pure checks of a step's activity
 * options. No zod and no Node imports: workflows call these checks before scheduling, so a
 * plan that slipped past validation fails its step with a message instead of failing its
 * workflow task in a loop.
 *
 * Server defaults are the dynamic-config defaults of the Temporal server
 * (common/dynamicconfig/constants.go) and https://docs.temporal.io/self-hosted-guide/defaults;
 * a cluster may be configured lower.
 */

// ---- Temporal server (dynamic-config defaults) -------------------------------

/** `limit.blobSize.error`: one payload (a workflow's input, an activity's input or result). */
export const PAYLOAD_LIMIT_BYTES = 2 * 1024 * 1024;
/** `limit.blobSize.warn`: the server logs a warning above this. */
export const PAYLOAD_WARN_BYTES = 512 * 1024;
/** `limit.historyCount.error`: the server terminates a run whose history has more events. */
export const HISTORY_EVENTS_LIMIT = 50 * 1024;
/** `limit.historyCount.warn`. */
export const HISTORY_EVENTS_WARN = 10 * 1024;
/** `limit.historySize.error`: the server terminates a run whose history is larger. */
export const HISTORY_BYTES_LIMIT = 50 * 1024 * 1024;
/** `limit.historySize.warn`. */
export const HISTORY_BYTES_WARN = 10 * 1024 * 1024;
/** `history.maximumSignalsPerExecution`: a run refuses every signal past this many. */
export const SIGNALS_PER_RUN = 10_000;
/** `history.maxTotalUpdates`: a run refuses every update past this many accepted (rejected ones do not count). */
export const UPDATES_PER_RUN = 2000;
/** `history.maxInFlightUpdates`: updates a run holds at once (a long poll is one until it returns). */
export const UPDATES_IN_FLIGHT = 10;
/** Temporal's per-run limits by what they count (server defaults; a cluster may set them lower). */
export const RUN_LIMITS = { signals: SIGNALS_PER_RUN, updates: UPDATES_PER_RUN, events: HISTORY_EVENTS_LIMIT, bytes: HISTORY_BYTES_LIMIT } as const;
export type LimitName = keyof typeof RUN_LIMITS;
export type RunLimitValues = Record<LimitName, number>;

/**
 * A run's limits: Temporal's defaults, or lower ones its cluster sets (`CADRE_RUN_LIMITS`, passed in
 * the run's input, so the run keeps within what its server really takes). Not a number, or not
 * above 0: the default.
 */
export function runLimits(given?: Partial<Record<string, unknown>>): RunLimitValues {
  const pick = (name: LimitName) => {
    const value = given?.[name];
    return typeof value === 'number' && Number.isFinite(value) && value >= 1 ? Math.floor(value) : RUN_LIMITS[name];
  };
  return { signals: pick('signals'), updates: pick('updates'), events: pick('events'), bytes: pick('bytes') };
}

/** What each counts, as people read it. */
export const LIMIT_WORDS: Readonly<Record<LimitName, string>> = { signals: 'signals', updates: 'updates', events: 'history events', bytes: 'bytes of history' };
/** `limit.maxIDLength`: workflow, activity and timer ids, in UTF-8 bytes. */
export const MAX_ID_BYTES = 1000;
/** `limit.numPendingActivities.error`: more running activities and ScheduleActivityTask fails. */
export const MAX_PENDING_ACTIVITIES = 2000;
/** `limit.numPendingChildExecutions.error`. */
export const MAX_PENDING_CHILD_WORKFLOWS = 2000;
/** Static and activity summaries (Web UI), per Temporal's "enriching the UI" docs. */
export const SUMMARY_LIMIT_BYTES = 200;
/** A run's static details (Web UI), per the same docs. */
export const DETAILS_LIMIT_BYTES = 20_000;
/** `RetryPolicy.maximum_attempts` is an int32 in Temporal's protobuf API. */
export const MAX_INT32 = 2_147_483_647;

// ---- cadre's own, chosen to stay inside the above -----------------------------

/**
 * Longest duration cadre accepts (10 years). The TypeScript SDK turns milliseconds into a
 * protobuf Duration with `msNumberToTs`, which throws on non-finite values (a workflow task
 * that fails in a loop) and loses precision past 2^53 ms; the server silently caps durations
 * at 250 years. `onTimeout: extend` doubles a timeout up to 3 times: 80 years stays far inside.
 */
export const MAX_DURATION_MS = 3650 * 24 * 60 * 60 * 1000;
/** Shortest timeout: below 1ms the protobuf Duration can round to zero, which Temporal reads as "not set". */
export const MIN_DURATION_MS = 1;
/**
 * Step ids name activities (`<step>[<index>]#<n>`, `compensate:<step>`) and their summaries
 * (`<step>: waiting for a human`): 128 keeps both well under the 200-byte summary limit.
 */
export const MAX_STEP_ID_LENGTH = 128;
/** Plan names go into workflow ids (`plan-<name>-<hash>`), summaries and a search attribute. */
export const MAX_PLAN_NAME_LENGTH = 100;
export const MAX_INPUT_NAME_LENGTH = 128;
/** Tools run with the workspace path, which every activity carries; Linux's PATH_MAX. */
export const MAX_WORKSPACE_LENGTH = 4096;
/**
 * Steps in one plan. A step costs about 6 history events, so 5,000 chained steps (~30,000
 * events) stay under the 51,200-event limit; validation warns well before.
 */
export const MAX_STEPS = 5000;
/** Items in a literal forEach list (longer lists run in child workflows, FOREACH_CHILD_THRESHOLD at a time). */
export const MAX_FOREACH_ITEMS = 100_000;
/** forEach items running at once when the step does not say (keeps long lists far from MAX_PENDING_ACTIVITIES). */
export const DEFAULT_FOREACH_CONCURRENCY = 10;
/** forEach loops above this many items run in child workflows, keeping each history small. */
export const FOREACH_CHILD_THRESHOLD = 1000;
/** Step outputs above this size are stored outside the workflow's history. */
export const BLOB_THRESHOLD_BYTES = 64 * 1024;
/** Nesting of values in `with`, `ask`, `output`, `forEach` and inputs: templates and JSON walk them. */
export const MAX_NESTING_DEPTH = 64;
/** `when` expressions: Jexl parses and evaluates recursively, so bound both the text and its tree. */
export const MAX_EXPRESSION_LENGTH = 1000;
export const MAX_EXPRESSION_DEPTH = 64;
/** The text between `{{` and `}}`: a path and perhaps `| default(...)`. */
export const MAX_TEMPLATE_LENGTH = 2000;
/** A question is read by a person; runPlan fails an ask whose resolved question is longer. */
export const MAX_QUESTION_BYTES = 64 * 1024;
/** An agent's prompt (after templates): bigger inputs belong in files the agent reads with its tools. */
export const MAX_PROMPT_BYTES = 256 * 1024;
/**
 * The start request carries the compiled plan and its inputs as one JSON payload; keep room
 * under PAYLOAD_LIMIT_BYTES for the payload's metadata.
 */
export const MAX_START_PAYLOAD_BYTES = PAYLOAD_LIMIT_BYTES - 16 * 1024;

// ---- checks ----------------------------------------------------------------

export interface LimitProblem {
  /** The option at fault, as named in Temporal's ActivityOptions (`retry.maximumAttempts`). */
  field: string;
  message: string;
}

/** Activity options as milliseconds, named as in Temporal's ActivityOptions. */
export interface ActivityLimitsInput {
  activityId?: string;
  scheduleToCloseTimeout?: number;
  startToCloseTimeout?: number;
  heartbeatTimeout?: number;
  retry?: RetryLimitsInput;
}

export interface RetryLimitsInput {
  /** 0 means unlimited, as in Temporal. */
  maximumAttempts?: number;
  initialInterval?: number;
  maximumInterval?: number;
  backoffCoefficient?: number;
}

/** Temporal's default when a retry policy leaves `initialInterval` out. */
export const DEFAULT_INITIAL_INTERVAL_MS = 1000;

/** A duration in milliseconds that Temporal and the SDK accept: finite, from 1ms (or 0 when allowed) to 10 years. */
export function checkDurationMs(ms: number, field: string, options: { allowZero?: boolean } = {}): LimitProblem[] {
  if (typeof ms !== 'number' || Number.isNaN(ms)) return [{ field, message: 'is not a duration' }];
  if (options.allowZero && ms === 0) return [];
  if (ms < MIN_DURATION_MS) {
    return [{ field, message: `${formatDurationMs(ms)} is too short: use at least ${formatDurationMs(MIN_DURATION_MS)}` }];
  }
  if (!(ms <= MAX_DURATION_MS)) {
    return [{ field, message: `${formatDurationMs(ms)} is too long: use at most ${formatDurationMs(MAX_DURATION_MS)} (10 years)` }];
  }
  return [];
}

export function checkRetryPolicy(retry: RetryLimitsInput, prefix = 'retry'): LimitProblem[] {
  const problems: LimitProblem[] = [];
  const attempts = retry.maximumAttempts;
  if (attempts !== undefined && !(Number.isInteger(attempts) && attempts >= 0 && attempts <= MAX_INT32)) {
    problems.push({
      field: `${prefix}.maximumAttempts`,
      message: `${String(attempts)} is not a whole number of at most ${MAX_INT32} (Temporal keeps it in a 32-bit integer)`,
    });
  }
  if (retry.initialInterval !== undefined) problems.push(...checkDurationMs(retry.initialInterval, `${prefix}.initialInterval`));
  if (retry.maximumInterval !== undefined) {
    const own = checkDurationMs(retry.maximumInterval, `${prefix}.maximumInterval`);
    const initial = retry.initialInterval ?? DEFAULT_INITIAL_INTERVAL_MS;
    if (own.length === 0 && retry.maximumInterval < initial) {
      own.push({
        field: `${prefix}.maximumInterval`,
        message: `${formatDurationMs(retry.maximumInterval)} is shorter than initialInterval (${formatDurationMs(initial)}): Temporal refuses that`,
      });
    }
    problems.push(...own);
  }
  const coefficient = retry.backoffCoefficient;
  if (coefficient !== undefined && !(Number.isFinite(coefficient) && coefficient >= 1)) {
    problems.push({ field: `${prefix}.backoffCoefficient`, message: `${String(coefficient)} must be a finite number of at least 1` });
  }
  return problems;
}

export function checkActivityId(id: string, field = 'activityId'): LimitProblem[] {
  const bytes = utf8Length(id);
  if (bytes === 0) return [{ field, message: 'an activity id cannot be empty' }];
  if (bytes > MAX_ID_BYTES) return [{ field, message: `activity id is ${bytes} bytes long; Temporal allows ${MAX_ID_BYTES}` }];
  return [];
}

/** Every problem Temporal would refuse a ScheduleActivityTask command for, or the SDK would throw on. */
export function checkActivityOptions(options: ActivityLimitsInput): LimitProblem[] {
  const problems: LimitProblem[] = [];
  if (options.activityId !== undefined) problems.push(...checkActivityId(options.activityId));
  if (options.scheduleToCloseTimeout === undefined && options.startToCloseTimeout === undefined) {
    problems.push({ field: 'scheduleToCloseTimeout', message: 'an activity needs a schedule-to-close or start-to-close timeout' });
  }
  for (const field of ['scheduleToCloseTimeout', 'startToCloseTimeout', 'heartbeatTimeout'] as const) {
    const value = options[field];
    if (value !== undefined) problems.push(...checkDurationMs(value, field));
  }
  if (options.retry) problems.push(...checkRetryPolicy(options.retry));
  return problems;
}

/** Bytes of a string in UTF-8, without Buffer or TextEncoder (not available everywhere workflows run). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** `1ms`, `30s`, `3650d`: the largest whole unit, else milliseconds. */
export function formatDurationMs(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
