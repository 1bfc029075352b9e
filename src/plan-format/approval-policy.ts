/**
 * Which tool calls an agent may make on its own, must not make, or must ask a human about, and
 * which choice a decision names: what a plan's `approvals` and `decide` choices mean. Pure (the
 * agent workflow calls them on what the model said), beside the plan format's schema.
 */
import type { ApprovalPolicy, Approvals } from './types';

/** A tool without a policy is allowed: listing it in the agent's tools was the plan author's choice. */
export function approvalFor(approvals: Approvals, tool: string, args: Record<string, unknown>): ApprovalPolicy {
  // An MCP tool falls back to its server's `mcp:<server>/*` policy.
  const server = /^mcp:[^/]+\//.exec(tool)?.[0];
  const policy = approvals[tool] ?? (server ? approvals[`${server}*`] : undefined);
  if (policy === undefined) return 'allow';
  if (typeof policy === 'string') return policy;
  // Command globs (shell only): the first that matches the whole command decides; none matching allows.
  const command = typeof args.command === 'string' ? args.command.trim() : '';
  for (const [glob, decision] of Object.entries(policy)) {
    if (globMatches(glob, command)) return decision;
  }
  return 'allow';
}

/** `*` is any run of characters (spaces and slashes too), `?` one character; the rest is literal. */
export function globMatches(glob: string, text: string): boolean {
  // Iterative matching with one backtrack point: linear-ish, no regular expression to blow up.
  let g = 0;
  let t = 0;
  let star = -1;
  let mark = 0;
  while (t < text.length) {
    if (g < glob.length && glob[g] === '*') {
      star = g++;
      mark = t;
    } else if (g < glob.length && (glob[g] === '?' || glob[g] === text[t])) {
      g++;
      t++;
    } else if (star >= 0) {
      g = star + 1;
      t = ++mark;
    } else return false;
  }
  while (g < glob.length && glob[g] === '*') g++;
  return g === glob.length;
}

/** The choice a reply names: exactly, or with case, quotes, spaces and a final period set aside. */
export function matchChoice(text: string, choices: string[]): string | undefined {
  const plain = (s: string) => s.trim().replace(/^["'`*]+|["'`*.!]+$/g, '').trim().toLowerCase();
  const said = plain(text);
  return choices.find((c) => c === text) ?? choices.find((c) => plain(c) === said);
}
