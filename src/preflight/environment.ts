/**
 * The environment checks of a preflight (E2xx): what a compiled plan needs on the machine that
 * runs it. Only what is written out in the plan is checked; a templated command, URL or path
 * (`{{ ... }}`) is known only when the run gets there. What a step before may create is only a
 * warning (order.ts); an error is what the run would certainly fail on.
 */
import { lookup } from 'node:dns/promises';
import { statSync } from 'node:fs';
import path from 'node:path';
import type { CompiledPlan, CompiledStep } from '../plan-format/types';
import { problem, type PreflightProblem } from './codes';
import { mayCreate, writersBefore } from './order';
import { egressRefusal, sandboxProblems } from './sandbox';
import { shellStepProblems } from './shell-step';
import { NO_EGRESS } from '../egress/policy';
import { loadPricing } from '../providers/config';
import type { Pricing } from '../providers/prices';
import { hasCostBudget, priceProblems } from './prices';

const TEMPLATED = /\{\{/;

export interface EnvironmentProbe {
  env: NodeJS.ProcessEnv;
  resolves(host: string): Promise<boolean>;
  /** The price table and default model of the config file here (prices.ts); none: no prices. */
  pricing?(): Pricing;
}

export const systemProbe: EnvironmentProbe = {
  env: process.env,
  resolves: (host) =>
    lookup(host).then(
      () => true,
      () => false,
    ),
  pricing: () => loadPricing(process.env.CADRE_CONFIG ?? 'cadre.config.yaml'),
};

export async function environmentProblems(plan: CompiledPlan, probe: EnvironmentProbe = systemProbe): Promise<PreflightProblem[]> {
  // Every step runs in the workspace: nothing can create it first.
  // A workspace cloned from a repository exists only once a host clones it.
  const problems: PreflightProblem[] = plan.source || isDirectory(plan.workspace) ? [] : [problem('CADRE-E202', 'workspace', `${plan.workspace} is not a directory`)];
  const writers = writersBefore(plan);
  const hosts = new Map<string, string>();
  for (const [i, step] of plan.steps.entries()) {
    const at = `steps[${i}]`;
    // A worktree of a clone (`repo: "."`) is made from the clone the host makes.
    if (!plan.source) problems.push(...worktreeProblems(step, at, writers));
    if (step.action.kind !== 'tool') continue;
    const params = step.action.with;
    if (step.action.tool === 'shell') problems.push(...(await shellStepProblems({ plan, params, at, writers: writers(step.id), env: probe.env })));
    if (step.action.tool === 'http.request') problems.push(...urlProblems(plan, params, at, hosts));
  }
  problems.push(...sandboxProblems(plan));
  if (hasCostBudget(plan)) problems.push(...priceProblems(plan, probe.pricing?.() ?? { prices: {} }));
  for (const [host, where] of hosts) {
    if (!(await probe.resolves(host))) problems.push(problem('CADRE-E203', where, `the host ${host} does not resolve`));
  }
  return problems;
}

/** A worktree's repository: an error when missing, a warning when a step before may create it. */
function worktreeProblems(step: CompiledStep, at: string, writers: (id: string) => string[]): PreflightProblem[] {
  const repo = step.worktree?.repo;
  if (repo === undefined || isDirectory(path.join(repo, '.git')) || isFile(path.join(repo, '.git'))) return [];
  const earlier = writers(step.id);
  const message = `${repo} is not a git repository`;
  if (earlier.length === 0) return [problem('CADRE-E202', `${at}.worktree.repo`, message)];
  return [problem('CADRE-E202', `${at}.worktree.repo`, `${message}: ${mayCreate(earlier)}`, 'warning')];
}

/** E206 now; the host is kept for the E203 lookup at the end. */
function urlProblems(plan: CompiledPlan, params: Record<string, unknown>, at: string, hosts: Map<string, string>): PreflightProblem[] {
  if (typeof params.url !== 'string' || TEMPLATED.test(params.url)) return [];
  try {
    const url = new URL(params.url);
    hosts.set(url.hostname.replace(/^\[|\]$/g, ''), `${at}.with.url`);
    const refusal = egressRefusal(url, plan.sandbox?.egress ?? NO_EGRESS);
    return refusal ? [problem('CADRE-E206', `${at}.with.url`, refusal)] : [];
  } catch {
    // The validator reports a bad URL.
    return [];
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
