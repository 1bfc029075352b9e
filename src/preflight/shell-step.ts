/**
 * Preflight of a shell step: the programs its command runs (E201) and the variables it reads (E204).
 * A program missing here is an error when nothing can make it appear: a bare name not on PATH
 * (earlier steps are not assumed to install programs), or a path no earlier step may write. It is a
 * warning when the step's command or an earlier step may create it, when the command changes PATH
 * or looks the name up first (`command -v x && x`), or when the command did not parse in full.
 */
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import type { CompiledPlan } from '../plan-format/types';
import { problem, type PreflightProblem } from './codes';
import { mayCreate } from './order';
import { passedToTools, setForTools } from './sandbox';
import { type CommandReading, type ProgramRun, readCommand } from './shell';

const TEMPLATED = /\{\{/;

export interface ShellStep {
  plan: CompiledPlan;
  params: Record<string, unknown>;
  /** `steps[2]` */
  at: string;
  /** The steps before it that may write files (order.ts). */
  writers: string[];
  env: NodeJS.ProcessEnv;
}

export async function shellStepProblems(step: ShellStep): Promise<PreflightProblem[]> {
  const { command } = step.params;
  if (typeof command !== 'string' || TEMPLATED.test(command)) return [];
  const reading = await readCommand(command);
  const problems = reading.programs.flatMap((run) => programProblem(run, reading, step) ?? []);
  return [...problems, ...variableProblems(reading.variables, step)];
}

function programProblem(run: ProgramRun, reading: CommandReading, step: ShellStep): PreflightProblem | undefined {
  // A program in a workspace cloned on the host (./build.sh) cannot be looked for here.
  if (step.plan.source && run.name.includes('/') && !path.isAbsolute(run.name)) return undefined;
  const cwd = cwdOf(step);
  if (findProgram(run.name, cwd, step.env)) return undefined;
  const where = `${step.at}.with.command`;
  const missing = `"${run.name}" is not ${whereMissing(run.name, cwd, step.plan.workspace)}`;
  const maybe = whyPossible(run, reading, step);
  return maybe ? problem('CADRE-E201', where, `${missing}: ${maybe}`, 'warning') : problem('CADRE-E201', where, missing);
}

function whereMissing(program: string, cwd: string, workspace: string): string {
  if (!program.includes('/')) return 'on PATH';
  if (path.isAbsolute(program)) return 'an executable file';
  return cwd === workspace ? 'in the workspace' : `in ${cwd}`;
}

/** Why a missing program may be there when the command runs it, or undefined when it cannot be. */
function whyPossible(run: ProgramRun, reading: CommandReading, step: ShellStep): string | undefined {
  if (reading.unparsable !== undefined) return `the command did not parse in full (${reading.unparsable}), so it may be misread`;
  if (reading.lookedUp.has(run.name)) return 'the command looks it up first, and may do without it';
  if (!run.name.includes('/')) return reading.changesPath || stepEnv(step).PATH !== undefined ? 'the command changes PATH (or sources a file) first' : undefined;
  if (run.afterChanges) return 'the command may create it (or change directory) before it runs it';
  return step.writers.length > 0 ? mayCreate(step.writers) : undefined;
}

function variableProblems(names: string[], step: ShellStep): PreflightProblem[] {
  const where = `${step.at}.with.command`;
  return names.flatMap((name) => {
    if (name in stepEnv(step) || setForTools(name, step.plan)) return [];
    if (step.env[name] === undefined) return [problem('CADRE-E204', where, `$${name} is not set (set it, or give it in the step's env)`)];
    if (passedToTools(name, step.plan)) return [];
    return [problem('CADRE-E204', where, `$${name} is set here, but the sandbox passes tools only the variables it is told: add ${name} to the plan's sandbox.env`)];
  });
}

function stepEnv(step: ShellStep): Record<string, unknown> {
  return (step.params.env ?? {}) as Record<string, unknown>;
}

function cwdOf(step: ShellStep): string {
  const { cwd } = step.params;
  return typeof cwd === 'string' && !TEMPLATED.test(cwd) ? path.resolve(step.plan.workspace, cwd) : step.plan.workspace;
}

function findProgram(program: string, cwd: string, env: NodeJS.ProcessEnv): boolean {
  if (program.includes('/')) return isExecutableFile(path.resolve(cwd, program));
  return (env.PATH ?? '').split(path.delimiter).some((dir) => dir !== '' && isExecutableFile(path.join(dir, program)));
}

function isExecutableFile(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
