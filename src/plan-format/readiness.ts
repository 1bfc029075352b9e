/**
 * Which pending steps may start: those whose every need has completed or been skipped.
 * Counts instead of rescans, so a run costs O(steps + dependencies), not O(steps²). Pure.
 */
export class Readiness {
  private readonly missing = new Map<string, number>();
  private readonly dependents = new Map<string, string[]>();
  private readonly order = new Map<string, number>();
  private readonly ready = new Set<string>();
  /** Steps a run before this one (continue-as-new) already ran: never ready again. */
  private readonly done = new Set<string>();

  constructor(steps: readonly { id: string; needs: readonly string[] }[]) {
    steps.forEach((step, i) => {
      this.order.set(step.id, i);
      this.missing.set(step.id, step.needs.length);
      for (const need of step.needs) {
        const list = this.dependents.get(need);
        if (list) list.push(step.id);
        else this.dependents.set(need, [step.id]);
      }
      if (step.needs.length === 0) this.ready.add(step.id);
    });
  }

  /** A step completed or was skipped: its dependents each need one step fewer. */
  satisfied(id: string): void {
    for (const dependent of this.dependents.get(id) ?? []) {
      const left = (this.missing.get(dependent) ?? 0) - 1;
      this.missing.set(dependent, left);
      if (left === 0) this.ready.add(dependent);
    }
  }

  /** A step that ended in an earlier run of this one. */
  finished(id: string): void {
    this.done.add(id);
    this.ready.delete(id);
  }

  /** The steps ready to start, in declaration order (the order their commands are issued in), once each. */
  take(): string[] {
    if (this.ready.size === 0) return [];
    const ids = [...this.ready].filter((id) => !this.done.has(id)).sort((a, b) => (this.order.get(a) ?? 0) - (this.order.get(b) ?? 0));
    this.ready.clear();
    return ids;
  }
}
