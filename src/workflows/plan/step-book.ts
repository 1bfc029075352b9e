/**
 * The steps of a plan run and where each stands: records as diagnostics show them, what templates
 * and `when` read as `steps`, counts by status, readiness. Every status change goes through
 * setStatus, so they stay in step.
 */
import type { CompiledStep } from '../../plan-format/types';
import { STEP_STATUSES, type StepRecord, type StepStatus } from '../../protocol/definitions';
import { stepEnded, stepStarted, toolLabel } from './metrics';
import { Readiness } from '../../plan-format/readiness';

export const TERMINAL = new Set<StepStatus>(['completed', 'skipped', 'failed', 'cancelled']);

export class StepBook {
  private readonly byId = new Map<string, CompiledStep>();
  private readonly records = new Map<string, StepRecord>();
  /** What templates and `when` read as `steps`: kept up to date instead of rebuilt per read. */
  readonly scope: Record<string, { output: unknown; status: StepStatus }> = {};
  readonly counts = Object.fromEntries(STEP_STATUSES.map((s) => [s, 0])) as Record<StepStatus, number>;
  /** Running, waiting and failed steps: what the Web UI lists for a long plan. */
  private readonly notable = new Set<string>();
  private terminal = 0;
  private readonly readiness: Readiness;

  /** Throws on two steps with one id, or a step that needs an unknown one (input no validator checked). */
  constructor(private readonly steps: CompiledStep[]) {
    for (const step of steps) {
      if (this.byId.has(step.id)) throw new Error(`two steps have the id "${step.id}"`);
      this.byId.set(step.id, step);
      this.records.set(step.id, { id: step.id, status: 'pending', attempts: 0 });
      this.scope[step.id] = { output: undefined, status: 'pending' };
    }
    for (const step of steps) {
      const unknown = step.needs.find((need) => !this.byId.has(need));
      if (unknown !== undefined) throw new Error(`step "${step.id}" needs unknown step "${unknown}"`);
    }
    this.counts.pending = steps.length;
    this.readiness = new Readiness(steps);
  }

  step(id: string): CompiledStep {
    return this.byId.get(id) as CompiledStep;
  }

  record(id: string): StepRecord {
    return this.records.get(id) as StepRecord;
  }

  /** Steps whose needs are all met, each once. */
  takeReady(): string[] {
    return this.readiness.take();
  }

  get allEnded(): boolean {
    return this.terminal === this.steps.length;
  }

  /** Copies of every record, in plan order. */
  copies(): StepRecord[] {
    return this.steps.map((s) => ({ ...this.record(s.id) }));
  }

  /** Every step's record for a short plan; the running, waiting and failed ones for a long one. */
  shown(all: boolean): StepRecord[] {
    return all ? this.steps.map((s) => this.record(s.id)) : [...this.notable].map((id) => this.record(id));
  }

  setStatus(id: string, status: StepStatus): void {
    const record = this.record(id);
    const before = record.status;
    if (before === status) return;
    record.status = status;
    this.scope[id].status = status;
    this.counts[before]--;
    this.counts[status]++;
    const tool = toolLabel(this.step(id).action);
    if (status === 'running' && before !== 'waiting') stepStarted(tool);
    else if (status === 'completed' || status === 'failed' || status === 'skipped') stepEnded(tool, status);
    if (TERMINAL.has(status) && !TERMINAL.has(before)) this.terminal++;
    if (status === 'running' || status === 'waiting' || status === 'failed') this.notable.add(id);
    else this.notable.delete(id);
    if (status === 'completed' || status === 'skipped') this.readiness.satisfied(id);
  }

  /** Where every step stands and what it gave, for the run this one continues as (continue-as-new.ts). */
  carried(): { records: StepRecord[]; outputs: Record<string, unknown> } {
    const outputs: Record<string, unknown> = {};
    for (const step of this.steps) {
      if (this.scope[step.id].output !== undefined) outputs[step.id] = this.scope[step.id].output;
    }
    return { records: this.copies(), outputs };
  }

  /** The steps as the run before this one left them: counts and readiness follow; no metric counts them again. */
  restore(records: StepRecord[], outputs: Record<string, unknown>): void {
    for (const carried of records) {
      const record = this.records.get(carried.id);
      if (!record || carried.status === 'pending') continue;
      const { status } = carried;
      Object.assign(record, carried);
      this.scope[carried.id] = { output: outputs[carried.id], status };
      this.counts.pending--;
      this.counts[status]++;
      if (status === 'failed') this.notable.add(carried.id);
      if (!TERMINAL.has(status)) continue;
      this.terminal++;
      this.readiness.finished(carried.id);
      if (status === 'completed' || status === 'skipped') this.readiness.satisfied(carried.id);
    }
  }

  /** Cancels every step that has not ended, with a note of why. */
  cancelUnfinished(note: string): void {
    for (const record of this.records.values()) {
      if (!TERMINAL.has(record.status)) {
        record.note = record.startedAt ? note : `not started: ${note}`;
        this.setStatus(record.id, 'cancelled');
      }
    }
  }
}
