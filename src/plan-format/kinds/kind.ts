/**
 * The plan-format half of a step kind, one module each (this folder), registered in index.ts; its
 * engine half is a module of src/workflows/plan/kinds/. What the half here holds: the step's
 * fields of the kind (zod), their compilation to the action workflows get, the fields whose
 * templates make dependencies, what a run of it costs Temporal's history, and how it is named.
 */
import type { z } from 'zod';
import { shorten } from '../text';
import type { StepAction } from '../types';

/** What one run of a step costs history, in Temporal's units; run-estimate.ts prices them. */
export type HistoryCost =
  /** An activity, with its literal parameters. */
  | { unit: 'activity'; params: unknown }
  | { unit: 'timer' }
  /** A child workflow, started with this. */
  | { unit: 'child'; input: unknown }
  /** A person's answer (an update), asked with this; never in a loop. */
  | { unit: 'ask'; input: unknown }
  /** Nothing but its value, whatever loops over it. */
  | { unit: 'inline'; value: unknown };

export interface PlanKind<K extends StepAction['kind'], S extends z.ZodRawShape> {
  kind: K;
  /** Its fields on a step, the first of which names the kind (`tool`'s parameters go in `with`). */
  fields: S;
  /** The action workflows get, from its fields as checked (`baseDir`: the plan file's folder). */
  compile(fields: z.infer<z.ZodObject<S>>, baseDir: string): Extract<StepAction, { kind: K }>;
  /** Its fields whose templates make dependencies and whose values must be JSON. */
  templated: readonly (keyof S & string)[];
  cost(action: Extract<StepAction, { kind: K }>): HistoryCost;
  /** How `cadre status` names it, in a few words. */
  describe(action: Extract<StepAction, { kind: K }>): string;
}

/** A kind, typed for its own module (the table in index.ts holds them all). */
export function planKind<K extends StepAction['kind'], S extends z.ZodRawShape>(kind: PlanKind<K, S>): PlanKind<K, S> {
  return kind;
}

/** User text on one line, shortened to `max` characters. */
export function brief(text: string, max: number): string {
  return shorten(text.replace(/\s+/g, ' '), max);
}
