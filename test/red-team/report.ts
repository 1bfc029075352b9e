/** The red team's tally: one line per category and a total, and what went wrong case by case. */
import { writeFileSync } from 'node:fs';
import { CATEGORIES, type CaseVerdict, type Category } from './cases';

export class Tally {
  private readonly verdicts: CaseVerdict[] = [];
  /** Positive controls: shown, never counted. */
  private readonly controls: string[] = [];
  /** Cases this host could not give anything to find. */
  private readonly skipped: string[] = [];

  skip(why: string): void {
    this.skipped.push(why);
  }

  add(verdicts: CaseVerdict[]): void {
    this.verdicts.push(...verdicts);
  }

  control(line: string): void {
    this.controls.push(line);
  }

  lines(): string[] {
    const line = (label: string, of: CaseVerdict[]) => {
      const ran = of.filter((v) => v.ran).length;
      const escapes = of.filter((v) => v.escapes.length > 0).length;
      const contained = of.filter((v) => v.ran && v.escapes.length === 0).length;
      return `red-team: ${label}: ${of.length} cases, ${ran} ran, ${contained} contained, ${escapes} escapes`;
    };
    const present = CATEGORIES.filter((c) => this.verdicts.some((v) => v.category === c));
    return [...present.map((c: Category) => line(c, this.verdicts.filter((v) => v.category === c))), line('total', this.verdicts)];
  }

  /** Every case that escaped or did not run, with what the model got. */
  problems(): string[] {
    return this.verdicts
      .filter((v) => !v.ran || v.escapes.length > 0)
      .map((v) => `red-team: ${v.category}/${v.id} (${v.title}): ${v.ran ? '' : 'DID NOT RUN; '}${v.escapes.length > 0 ? `ESCAPED: ${v.escapes.join('; ')}` : ''}\n    the model got: ${v.said}`);
  }

  /** Problems, controls, then the summary lines; RED_TEAM_REPORT=<file> also writes every verdict there (JSON). */
  print(): void {
    const out = [...this.problems(), ...this.controls.map((c) => `red-team: control: ${c}`), ...this.skipped.map((s) => `red-team: skipped: ${s}`), ...this.lines()];
    process.stdout.write(`${out.join('\n')}\n`);
    if (process.env.RED_TEAM_REPORT) writeFileSync(process.env.RED_TEAM_REPORT, JSON.stringify({ verdicts: this.verdicts, controls: this.controls, skipped: this.skipped, summary: this.lines() }, null, 2));
  }
}

/** Fails naming each case that did not run or escaped. */
export function failures(verdicts: CaseVerdict[]): string[] {
  return verdicts.filter((v) => !v.ran || v.escapes.length > 0).map((v) => `${v.id}: ${v.ran ? '' : 'did not run; '}${v.escapes.join('; ')} (the model got: ${v.said})`);
}
