/**
 * `cadre models test <model>`: which `toolCalls` mode reads this model's tool calls? One small
 * tool task per mode (required first, then native), each a single model turn: the mode works when the turn comes
 * back with the one call asked for. Nothing runs the call; the model needs no workspace.
 */
import { ApplicationFailure } from '@temporalio/common';
import { type ModelSettings, parseModelId, withToolCalls } from './config';
import { modelTurn } from './model-turn';
import { languageModel, toolCallsOf } from './registry';
import { TOOL_CALL_MODES, type ToolCallMode } from './tool-call-modes';

export interface ModeTrial {
  mode: ToolCallMode;
  /** `works`: the call came back as a tool call; `fails`: it did not; `skipped`: the mode cannot be set for this model. */
  outcome: 'works' | 'fails' | 'skipped';
  /** What the model did, in a few words. */
  detail: string;
  ms?: number;
}

export interface ModesReport {
  model: string;
  /** The `models.compatible` endpoint whose `toolCalls` the modes set, and its mode now. */
  endpoint?: { name: string; toolCalls: ToolCallMode };
  trials: ModeTrial[];
  /** The first mode that works, in TOOL_CALL_MODES' order (required, then native). */
  recommended?: ToolCallMode;
  /** What to do about it, for a person. */
  advice: string;
}

export interface TrialOptions {
  /** How long one mode's turn may take (small models on a CPU are slow). Default 2 minutes. */
  timeoutMs?: number;
  /** Hears each trial as it ends. */
  onTrial?: (trial: ModeTrial) => void;
}

const TOOL = 'fs_read';
const FILE = 'notes.txt';
const PROMPT = `Read the file ${FILE} with the ${TOOL} tool. Call the tool now; do not answer in words.`;
const TOOLS = [
  {
    name: TOOL,
    description: 'Read a text file of the workspace',
    inputSchema: { type: 'object', properties: { path: { type: 'string', description: 'the file, relative to the workspace' } }, required: ['path'], additionalProperties: false },
  },
];

/**
 * Failures no mode changes (a wrong name or key): trying the other modes would repeat them. A
 * server error may be the mode's (a server that refuses `tools` without its tool parser), so the
 * other modes are still tried.
 */
const NOT_THE_MODE = new Set(['ModelConfigInvalid', 'ModelAuthFailed', 'ModelNotFound', 'BadModelRequest']);

export async function tryToolCallModes(model: string, settings: ModelSettings, options: TrialOptions = {}): Promise<ModesReport> {
  const id = parseModelId(model);
  languageModel(id, settings); // a missing endpoint, model name or key fails here, with its fix, before any request
  const { mode: current, endpoint } = toolCallsOf(id, settings);
  const trials: ModeTrial[] = [];
  const errors: string[] = [];
  let stopped: string | undefined;
  for (const mode of TOOL_CALL_MODES) {
    let trial: ModeTrial;
    if (endpoint === undefined && mode !== 'native') trial = { mode, outcome: 'skipped', detail: 'toolCalls is set only for models.compatible endpoints' };
    else if (stopped !== undefined) trial = { mode, outcome: 'skipped', detail: 'not tried: the model failed for a reason no mode changes' };
    else {
      const attempt = await tryMode(model, endpoint === undefined ? settings : withToolCalls(settings, endpoint, mode), mode, options.timeoutMs ?? 120_000);
      trial = attempt.trial;
      if (attempt.error) errors.push(trial.detail);
      stopped = attempt.fatal ? trial.detail : undefined;
    }
    trials.push(trial);
    options.onTrial?.(trial);
  }
  const recommended = trials.find((t) => t.outcome === 'works')?.mode;
  // No trial got an answer: the first error is what to fix (a server that is not there, say).
  const unanswered = errors.length > 0 && errors.length === trials.filter((t) => t.outcome === 'fails').length ? errors[0] : undefined;
  return {
    model,
    ...(endpoint !== undefined && { endpoint: { name: endpoint, toolCalls: current } }),
    trials,
    ...(recommended && { recommended }),
    advice: advice(recommended, current, endpoint, stopped ?? unanswered),
  };
}

/** A trial; `error` when the model gave no answer at all, `fatal` when no other mode would get one either. */
async function tryMode(model: string, settings: ModelSettings, mode: ToolCallMode, timeoutMs: number): Promise<{ trial: ModeTrial; error?: true; fatal?: boolean }> {
  const started = Date.now();
  const ms = () => Date.now() - started;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  try {
    const turn = await modelTurn({ model, messages: [{ role: 'user', content: PROMPT }], tools: TOOLS, maxOutputTokens: 512 }, settings, deadline.signal);
    const call = turn.toolCalls[0];
    if (!call) {
      const said = turn.unparsedToolCall ? `wrote its call to ${turn.unparsedToolCall.tool} as text (${turn.unparsedToolCall.style} style), which this mode does not read` : `answered in words: ${quote(turn.text ?? '')}`;
      return { trial: { mode, outcome: 'fails', detail: said, ms: ms() } };
    }
    const args = JSON.stringify(call.args);
    if (call.error !== undefined) return { trial: { mode, outcome: 'fails', detail: `called ${call.name} ${clip(args)}, which cannot run: ${call.error}`, ms: ms() } };
    const asked = call.name === TOOL && typeof call.args.path === 'string' && call.args.path.replace(/^\.\//, '') === FILE;
    return { trial: { mode, outcome: asked ? 'works' : 'fails', detail: `called ${call.name} ${clip(args)}${asked ? '' : `, not ${TOOL} {"path":"${FILE}"}`}`, ms: ms() } };
  } catch (err) {
    if (deadline.signal.aborted) return { trial: { mode, outcome: 'fails', detail: `no answer within ${timeoutMs / 1000} s`, ms: ms() } };
    const failure = err instanceof ApplicationFailure ? err : undefined;
    if (failure?.type === 'ToolChoiceIgnored') return { trial: { mode, outcome: 'fails', detail: `the server ignores tool_choice "required": ${failure.message.replace(/^.*It said: /, 'it answered in words: ')}`, ms: ms() } };
    const detail = `${failure?.type ?? (err instanceof Error ? err.name : 'Error')}: ${err instanceof Error ? err.message : String(err)}`;
    return { trial: { mode, outcome: 'fails', detail, ms: ms() }, error: true, fatal: failure?.type != null && NOT_THE_MODE.has(failure.type) };
  } finally {
    clearTimeout(timer);
  }
}

/** `failed`: the error that kept the model from answering at all, when no trial got an answer. */
function advice(recommended: ToolCallMode | undefined, current: ToolCallMode, endpoint: string | undefined, failed: string | undefined): string {
  if (recommended === undefined && failed !== undefined) return `the model gave no answer, so no mode could be judged; fix this first: ${failed}`;
  if (recommended === undefined && endpoint === undefined) return 'native tool calls did not work; serve the model as an endpoint under models.compatible in cadre.config.yaml to try the other modes';
  if (recommended === undefined) {
    return 'no mode read a tool call from this model; try a bigger or newer model, or a server that parses tool calls itself (llama.cpp with --jinja, vLLM with --enable-auto-tool-choice)';
  }
  if (recommended === current) return current === 'native' ? 'native is the default: nothing to change' : `toolCalls: ${current} is set already: nothing to change`;
  return `add this line under models.compatible.${endpoint} in cadre.config.yaml:\n    toolCalls: ${recommended}`;
}

function quote(text: string): string {
  const line = text.trim().replace(/\s+/g, ' ');
  return line ? JSON.stringify(clip(line)) : '(nothing)';
}

function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}
