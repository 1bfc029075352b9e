/**
 * Preflight of a plan's containment: whether its commands can run in the sandbox on this machine,
 * which variables the sandbox passes them, and whether a literal URL is one its egress allows.
 */
import ipaddr from 'ipaddr.js';
import { type EgressPolicy, isAllowedHost, normalizeHost } from '../egress/policy';
import { bubblewrapAvailability } from '../sandbox/bubblewrap';
import { BASE_ENV_NAMES } from '../sandbox/environment';
import type { CompiledPlan } from '../plan-format/types';
import { problem, type PreflightProblem } from './codes';

/** Whether a plan's tools run commands: shell steps, agents with shell (roles may give it too, so team plans count). */
function runsCommands(plan: CompiledPlan): boolean {
  return plan.team !== undefined || plan.steps.some((s) => (s.action.kind === 'tool' && s.action.tool === 'shell') || (s.action.kind === 'agent' && s.action.agent.tools.includes('shell')));
}

export function sandboxProblems(plan: CompiledPlan): PreflightProblem[] {
  if (plan.sandbox?.mode === 'none' || process.env.CADRE_SANDBOX === 'none' || !runsCommands(plan)) return [];
  const available = bubblewrapAvailability();
  return available.ok ? [] : [problem('CADRE-E205', 'sandbox', available.reason)];
}

/** Set inside the sandbox whatever the worker has (its own empty home, /tmp), or by cadre for every command. */
const SET_INSIDE = ['HOME', 'TMPDIR', 'USER', 'LOGNAME', 'SHELL', 'CADRE_STEP', 'CADRE_ATTEMPT'];

/** Variables a tool gets whatever this machine has: cadre's own, and in the sandbox its home and user. */
export function setForTools(name: string, plan: CompiledPlan): boolean {
  return name === 'CADRE_STEP' || name === 'CADRE_ATTEMPT' || (plan.sandbox?.mode !== 'none' && SET_INSIDE.includes(name));
}

export function passedToTools(name: string, plan: CompiledPlan): boolean {
  return plan.sandbox?.mode === 'none' || BASE_ENV_NAMES.includes(name) || SET_INSIDE.includes(name) || (plan.sandbox?.env ?? []).includes(name);
}

/** Why the run would refuse this URL by its name alone (addresses are checked when it connects), or undefined. */
export function egressRefusal(url: URL, egress: EgressPolicy): string | undefined {
  const host = normalizeHost(url.hostname);
  if (!host) return undefined;
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const name = host.kind === 'ip' ? host.address : host.name;
  if (isLoopback(host)) return egress.loopback.includes(port) ? undefined : `${url.host} is this machine: the run refuses it unless egress.loopback lists ${port}`;
  if (isAllowedHost(name, egress.allow)) return undefined;
  if (host.kind === 'ip' && egress.addresses.some((cidr) => inRange(host.address, cidr))) return undefined;
  return `${url.hostname} is not in the plan's egress.allow${egress.allow.length ? ` (${egress.allow.join(', ')})` : ' (it allows no host)'}: the run would refuse it`;
}

function isLoopback(host: ReturnType<typeof normalizeHost>): boolean {
  if (!host) return false;
  if (host.kind === 'name') return host.name === 'localhost' || host.name.endsWith('.localhost');
  const parsed = ipaddr.parse(host.address);
  const plain = parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress() ? (parsed as ipaddr.IPv6).toIPv4Address() : parsed;
  return plain.range() === 'loopback' || plain.range() === 'unspecified';
}

function inRange(address: string, cidr: string): boolean {
  try {
    const parsed = ipaddr.parse(address);
    const range = ipaddr.parseCIDR(cidr);
    return parsed.kind() === range[0].kind() && parsed.match(range);
  } catch {
    return false;
  }
}
