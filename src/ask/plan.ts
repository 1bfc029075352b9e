/**
 * An intent and its slot values as a cadre plan: the intent's steps, its slots as plan inputs,
 * and for each slot the request left out (or gave a value it may not take) an `ask` step first,
 * whose answer the steps read instead of the input. The plan goes through the same validator as
 * plan files.
 */
import type { CompiledPlan } from '../plan-format/types';
import { formatIssues, validatePlan } from '../plan-format/validate';
import { CadreError } from '../errors/cadre-error';
import type { Intent, Slot } from './routes';

/** Slot values are words or short names; nothing longer reaches a slot's regular expression. */
const MAX_SLOT_CHARS = 100;

export interface AskPlan {
  plan: CompiledPlan;
  inputs: Record<string, string>;
  /** Slots the run will ask a person for, with why. */
  asking: { slot: string; why: string }[];
}

/** A slot value as the slot allows it (a choice in its own spelling), or why it is not one. */
export function checkSlot(slot: Slot, value: string): { ok: true; value: string } | { ok: false; why: string } {
  if (value.length > MAX_SLOT_CHARS) return { ok: false, why: `a value of ${value.length} characters is longer than a slot takes (${MAX_SLOT_CHARS})` };
  if (slot.choices) {
    const choice = slot.choices.find((c) => c.toLowerCase() === value.toLowerCase());
    return choice ? { ok: true, value: choice } : { ok: false, why: `"${value}" is not one of ${slot.choices.join(', ')}` };
  }
  if (slot.match && !new RegExp(slot.match).test(value)) return { ok: false, why: `"${value}" does not look like one` };
  return { ok: true, value };
}

export function buildPlan(intent: Intent, given: Record<string, string>, workspace: string): AskPlan {
  const inputs: Record<string, string> = {};
  const asking: AskPlan['asking'] = [];
  for (const [name, slot] of Object.entries(intent.slots)) {
    const value = given[name];
    const checked = value === undefined ? undefined : checkSlot(slot, value);
    if (checked?.ok) inputs[name] = checked.value;
    else asking.push({ slot: name, why: checked ? checked.why : 'the request does not say' });
  }
  const askSteps = asking.map(({ slot }) => {
    const spec = intent.slots[slot];
    return { id: `ask_${slot}`, ask: { question: spec.question, ...(spec.choices && { choices: spec.choices }) } };
  });
  const rewrite = (value: unknown): unknown => readAnswers(value, asking.map((a) => a.slot));
  const raw = {
    name: `ask-${intent.name.replace(/_/g, '-')}`,
    description: intent.description,
    workspace,
    inputs: Object.fromEntries(Object.keys(inputs).map((name) => [name, { type: 'string' }])),
    steps: [...askSteps, ...(rewrite(intent.steps) as unknown[])],
    ...(intent.output !== undefined && { output: rewrite(intent.output) }),
  };
  const result = validatePlan(raw, { baseDir: workspace });
  if (!result.ok) throw new CadreError(`intent ${intent.name} does not make a valid plan (fix the ask section of cadre.config.yaml):\n${formatIssues(result.issues)}`);
  return { plan: result.plan, inputs, asking };
}

/** Templates that read `inputs.<slot>` read the answer to `ask_<slot>` instead, for slots that are asked. */
function readAnswers(value: unknown, asked: string[]): unknown {
  if (asked.length === 0) return value;
  if (typeof value === 'string') {
    return value.replace(/\{\{[^}]*\}\}/g, (template) => asked.reduce((t, slot) => t.replace(new RegExp(`\\binputs\\.${slot}\\b`, 'g'), `steps.ask_${slot}.output`), template));
  }
  if (Array.isArray(value)) return value.map((v) => readAnswers(v, asked));
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, readAnswers(v, asked)]));
  return value;
}
