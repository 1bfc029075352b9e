/**
 * The step kinds of the plan format, by the name of their action: adding a kind is adding its
 * module here (its engine half goes in src/workflows/plan/kinds/, its action's data in
 * StepAction, types.ts, which both halves read).
 */
import type { z } from 'zod';
import type { StepAction } from '../types';
import { agentKind } from './agent';
import { askKind } from './ask';
import { decideKind } from './decide';
import { echoKind } from './echo';
import type { HistoryCost } from './kind';
import { toolKind } from './tool';

export type { HistoryCost } from './kind';

/** Each kind's step fields, optional on a step (schema.ts checks that a step has one kind's). */
export const KIND_FIELDS = { ...optional(toolKind.fields), ...optional(askKind.fields), ...optional(agentKind.fields), ...optional(decideKind.fields), ...optional(echoKind.fields) };

type AnyKind = { [K in StepAction['kind']]: { kind: K; fields: z.ZodRawShape; templated: readonly string[]; compile(fields: never, baseDir: string): StepAction; cost(action: never): HistoryCost; describe(action: never): string } }[StepAction['kind']];

const KINDS: Record<StepAction['kind'], AnyKind> = { tool: toolKind, ask: askKind, agent: agentKind, decide: decideKind, echo: echoKind };

/** The field naming each kind, in the order a step's kind is looked for. */
export const STEP_KINDS = Object.values(KINDS).map((k) => Object.keys(k.fields)[0]);

/** Every kind's fields whose templates make dependencies and whose values must be JSON. */
export const TEMPLATED_FIELDS = Object.values(KINDS).flatMap((k) => k.templated);

/** The action of a checked step (whose one kind schema.ts ensured). */
export function compileAction(step: Record<string, unknown>, baseDir: string): StepAction {
  const kind = Object.values(KINDS).find((k) => step[Object.keys(k.fields)[0]] !== undefined);
  if (!kind) throw new Error(`a step has none of ${STEP_KINDS.join(', ')}`);
  return (kind.compile as (fields: Record<string, unknown>, baseDir: string) => StepAction)(step, baseDir);
}

/** What one run of the action costs history. */
export function actionCost(action: StepAction): HistoryCost {
  return (KINDS[action.kind].cost as (action: StepAction) => HistoryCost)(action);
}

/** How `cadre status` names the action. */
export function describeAction(action: StepAction): string {
  return (KINDS[action.kind].describe as (action: StepAction) => string)(action);
}

function optional<S extends z.ZodRawShape>(fields: S): { [K in keyof S]: z.ZodOptional<S[K]> } {
  return Object.fromEntries(Object.entries(fields).map(([name, schema]) => [name, (schema as z.ZodType).optional()])) as unknown as { [K in keyof S]: z.ZodOptional<S[K]> };
}
