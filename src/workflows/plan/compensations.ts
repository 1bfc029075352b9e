/** Compensation: on abort or cancellation, the `compensate` actions of completed steps, most recent first. */
import { sleep } from '@temporalio/workflow';
import { hostActivities } from '../common/host-route';
import { durationMs } from '../../plan-format/duration';
import { resolveTemplates } from '../../plan-format/templates';
import type { CompiledStep, ToolCall } from '../../plan-format/types';
import type { CompensationRecord } from '../../protocol/definitions';
import { describeFailure } from '../common/failures';
import type { PlanRunContext } from './kinds';
import { compensationActivityOptions } from './step-options';

export interface CompensationHost extends PlanRunContext {
  step(id: string): CompiledStep;
  scope(): Record<string, unknown>;
}

export class Compensations {
  /** Steps in the order they completed. */
  private readonly completionOrder: string[] = [];
  /** What ran, as diagnostics show it. */
  readonly records: CompensationRecord[] = [];

  constructor(private readonly host: CompensationHost) {}

  completed(id: string): void {
    this.completionOrder.push(id);
  }

  /** The steps completed so far, in order, for a run that continues as new. */
  carried(): string[] {
    return [...this.completionOrder];
  }

  restore(order: string[]): void {
    this.completionOrder.push(...order);
  }

  /** Runs the `compensate` actions of completed steps, most recent first; a failure is recorded, not fatal. */
  async run(): Promise<void> {
    const completed = [...this.completionOrder].reverse();
    for (const id of completed) {
      const step = this.host.step(id);
      if (!step.compensate) continue;
      try {
        await this.runOne(step, step.compensate);
        this.records.push({ step: id, status: 'completed' });
      } catch (err) {
        this.records.push({ step: id, status: 'failed', error: describeFailure(err).message });
      }
      this.host.changed();
    }
  }

  private async runOne(step: CompiledStep, call: ToolCall): Promise<void> {
    const params = resolveTemplates(call.with, this.host.scope(), this.host.templates) as Record<string, unknown>;
    if (call.tool === 'sleep') {
      await sleep(durationMs(String(params.duration)), { summary: `compensate ${step.id}` });
      return;
    }
    const options = { ...this.host.activityIds.next(`compensate:${step.id}`), ...compensationActivityOptions(`compensate ${step.id}`) };
    const activities = hostActivities(options, this.host.host.route);
    await activities.runTool({ tool: call.tool, params, workspace: this.host.plan.workspace, stepId: step.id, ...this.host.inline(), ...this.host.sandbox() });
  }
}
