/**
 * The environment checks of a preflight (E2xx): what a compiled plan needs on the machine that
 * runs it. Only what is written out in the plan is checked; a templated command, URL or path
 * (`{{ ... }}`) is known only when the run gets there.
 */
import { lookup } from 'node:dns/promises';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import type { CompiledPlan } from '../spec/types';
import type { PreflightProblem } from './codes';
import { egressRefusal, passedToTools, sandboxProblems } from './sandbox';
import { NO_EGRESS } from '../egress/policy';

/** Shell words that are not programs on PATH. */
const SHELL_WORDS = new Set(
  'if then else elif fi for while until do done case esac in function time ! { } [[ ]] . : [ alias bg break builtin cd command continue declare echo eval exec exit export false fg getopts hash jobs kill let local printf pwd read readonly return set shift source test trap true type ulimit umask unalias unset wait'.split(' '),
);
const TEMPLATED = /\{\{/;

export interface EnvironmentProbe {
  env: NodeJS.ProcessEnv;
  resolves(host: string): Promise<boolean>;
}

export const systemProbe: EnvironmentProbe = {
  env: process.env,
  resolves: (host) =>
    lookup(host).then(
      () => true,
      () => false,
    ),
};

export async function environmentProblems(plan: CompiledPlan, probe: EnvironmentProbe = systemProbe): Promise<PreflightProblem[]> {
  const problems: PreflightProblem[] = [];
  if (!isDirectory(plan.workspace)) problems.push({ code: 'CADRE-E202', path: 'workspace', message: `${plan.workspace} is not a directory` });
  const hosts = new Map<string, string>();
  for (const [i, step] of plan.steps.entries()) {
    const at = `steps[${i}]`;
    if (step.worktree && !isDirectory(path.join(step.worktree.repo, '.git')) && !isFile(path.join(step.worktree.repo, '.git'))) {
      problems.push({ code: 'CADRE-E202', path: `${at}.worktree.repo`, message: `${step.worktree.repo} is not a git repository` });
    }
    if (step.action.kind !== 'tool') continue;
    const params = step.action.with;
    if (step.action.tool === 'shell' && typeof params.command === 'string' && !TEMPLATED.test(params.command)) {
      const stepEnv = (params.env ?? {}) as Record<string, unknown>;
      const program = firstProgram(params.command);
      const cwd = typeof params.cwd === 'string' && !TEMPLATED.test(params.cwd) ? path.resolve(plan.workspace, params.cwd) : plan.workspace;
      if (program && !findProgram(program, cwd, probe.env)) {
        problems.push({ code: 'CADRE-E201', path: `${at}.with.command`, message: `"${program}" is not ${program.includes('/') ? 'in the workspace' : 'on PATH'}` });
      }
      for (const name of variablesRead(params.command)) {
        if (name in stepEnv) continue;
        if (probe.env[name] === undefined) problems.push({ code: 'CADRE-E204', path: `${at}.with.command`, message: `$${name} is not set (set it, or give it in the step's env)` });
        else if (!passedToTools(name, plan)) {
          problems.push({ code: 'CADRE-E204', path: `${at}.with.command`, message: `$${name} is set here, but the sandbox passes tools only the variables it is told: add ${name} to the plan's sandbox.env` });
        }
      }
    }
    if (step.action.tool === 'http.request' && typeof params.url === 'string' && !TEMPLATED.test(params.url)) {
      try {
        const url = new URL(params.url);
        hosts.set(url.hostname.replace(/^\[|\]$/g, ''), `${at}.with.url`);
        const refusal = egressRefusal(url, plan.sandbox?.egress ?? NO_EGRESS);
        if (refusal) problems.push({ code: 'CADRE-E206', path: `${at}.with.url`, message: refusal });
      } catch {
        // The validator reports a bad URL.
      }
    }
  }
  problems.push(...sandboxProblems(plan));
  for (const [host, where] of hosts) {
    if (!(await probe.resolves(host))) problems.push({ code: 'CADRE-E203', path: where, message: `the host ${host} does not resolve` });
  }
  return problems;
}

/** The program a command starts with, after `NAME=value` assignments; undefined when that is not plain. */
export function firstProgram(command: string): string | undefined {
  const words = command.trim().split(/\s+/);
  let i = 0;
  while (i < words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[i])) i++;
  const word = words[i];
  if (!word || SHELL_WORDS.has(word) || !/^[A-Za-z0-9_./+-]+$/.test(word)) return undefined;
  return word;
}

/** `$NAME` and `${NAME}` in upper case (the convention for environment variables) that the command does not set itself. */
export function variablesRead(command: string): string[] {
  const read = new Set<string>();
  for (const match of command.matchAll(/\$(?:\{([A-Z][A-Z0-9_]*)(?:[:}])|([A-Z][A-Z0-9_]*))/g)) {
    const name = match[1] ?? match[2];
    // ${NAME:-default} and ${NAME:=x} need nothing set.
    if (match[1] && command.slice((match.index ?? 0) + match[0].length - 1).startsWith(':')) continue;
    read.add(name);
  }
  return [...read].filter((name) => !new RegExp(`(^|[\\s;&|(])(export\\s+)?${name}=`).test(command) && !new RegExp(`\\b(read|for)\\s+(-\\w+\\s+)*${name}\\b`).test(command));
}

function findProgram(program: string, workspace: string, env: NodeJS.ProcessEnv): boolean {
  if (program.includes('/')) return isExecutableFile(path.resolve(workspace, program));
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

function isDirectory(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
