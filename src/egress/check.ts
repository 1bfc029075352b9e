/**
 * The egress checker: decides on the addresses a host RESOLVES to at connect time, never on a
 * URL's text, and hands back only addresses it checked, so the caller connects to one of them.
 */
import { promises as dns } from 'node:dns';
import os from 'node:os';
import { ApplicationFailure } from '@temporalio/common';
import ipaddr from 'ipaddr.js';
import { isAllowedHost, normalizeHost, type EgressPolicy } from './policy';

export const EGRESS_DENIED = 'EgressDenied';

/** Why a destination was refused (the `rule` of a refusal's details). */
export type EgressRule =
  | 'allow'
  | 'loopback'
  | 'this-machine'
  | 'localhost-name'
  | 'unspecified'
  | 'private'
  | 'link-local'
  | 'metadata'
  | 'carrier-grade-nat'
  | 'unique-local'
  | 'reserved'
  | 'multicast'
  | 'broadcast'
  | 'embedded-ipv4'
  | 'invalid-host'
  | 'invalid-port'
  | 'scheme';

export interface EgressDeniedDetails {
  host: string;
  port: number;
  address?: string;
  rule: EgressRule;
}

export interface LookupAddress {
  address: string;
  family: number;
}

/** Resolves a name to all its addresses (like `dns.lookup(name, { all: true })`). */
export type EgressLookup = (hostname: string) => Promise<LookupAddress[]>;

export interface CheckOptions {
  lookup?: EgressLookup;
}

/** A destination that passed the checker: connect to `address` (or another of `addresses`), nothing else. */
export interface CheckedDestination {
  /** The host as normalised (lower case, punycode, canonical IP text). */
  host: string;
  port: number;
  address: string;
  family: 4 | 6;
  /** Every address the host resolved to; each one passed. */
  addresses: { address: string; family: 4 | 6 }[];
}

export const defaultLookup: EgressLookup = (hostname) => dns.lookup(hostname, { all: true });

export function egressDenied(message: string, details: EgressDeniedDetails): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, EGRESS_DENIED, details);
}

export function isEgressDenied(err: unknown): err is ApplicationFailure {
  return err instanceof ApplicationFailure && err.type === EGRESS_DENIED;
}

/**
 * Resolves `host` and returns the address to connect to, or throws an `EgressDenied`
 * ApplicationFailure. Every address the host resolves to must pass: a rebinding answer
 * (one public address and one loopback) is refused as a whole.
 */
export async function checkDestination(host: string, port: number, policy: EgressPolicy, options: CheckOptions = {}): Promise<CheckedDestination> {
  const given = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw egressDenied(`egress denied: ${JSON.stringify(port)} is not a port (host "${given}")`, { host, port, rule: 'invalid-port' });
  }
  const normal = normalizeHost(host);
  if (!normal) throw egressDenied(`egress denied: ${JSON.stringify(host)} is not a host name or IP address`, { host, port, rule: 'invalid-host' });

  let name: string | undefined;
  let answers: LookupAddress[];
  if (normal.kind === 'ip') {
    answers = [{ address: normal.address, family: normal.address.includes(':') ? 6 : 4 }];
  } else {
    name = normal.name;
    // A name that is not in the list is refused before it is even looked up (no DNS query leaks it).
    if (!isLocalName(name) && !isAllowedHost(name, policy.allow)) {
      throw egressDenied(`egress denied: ${name} is not in egress.allow (${describeList(policy.allow)})`, { host, port, rule: 'allow' });
    }
    answers = await (options.lookup ?? defaultLookup)(name);
    if (answers.length === 0) throw Object.assign(new Error(`${name} did not resolve to any address`), { code: 'ENOTFOUND', hostname: name });
  }

  const own = ownAddresses();
  const checked: { address: string; family: 4 | 6 }[] = [];
  for (const answer of answers) {
    const refusal = judge(answer.address, { name, given, port, policy, own, answerCount: answers.length });
    if (refusal) throw egressDenied(refusal.message, { host, port, address: answer.address, rule: refusal.rule });
    checked.push({ address: answer.address, family: answer.address.includes(':') ? 6 : 4 });
  }
  return { host: normal.kind === 'ip' ? normal.address : normal.name, port, address: checked[0].address, family: checked[0].family, addresses: checked };
}

interface JudgeContext {
  /** The name looked up, or undefined for an IP literal. */
  name: string | undefined;
  given: string;
  port: number;
  policy: EgressPolicy;
  own: Map<string, string>;
  answerCount: number;
}

function judge(address: string, ctx: JudgeContext): { rule: EgressRule; message: string } | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return { rule: 'invalid-host', message: `egress denied: "${ctx.given}" resolved to ${JSON.stringify(address)}, which is not an IP address` };
  }
  const canonical = withoutZone(parsed.toString());
  const where = `${withPort(address, ctx.port)}${describeOrigin(canonical, ctx)}`;
  const ownInterface = ctx.own.get(canonical) ?? ctx.own.get(plainIPv4(parsed)?.toString() ?? '');
  const found: AddressClass = ownInterface !== undefined ? { rule: 'this-machine', description: `this machine's own address (${ownInterface})`, opensWith: 'loopback' } : classify(parsed);

  if (found.opensWith === 'loopback') {
    if (ctx.policy.loopback.includes(ctx.port)) return undefined;
    return { rule: found.rule, message: `egress denied: ${where} is ${found.description}; allow it with egress.loopback: [${ctx.port}]` };
  }
  if (ctx.name !== undefined && isLocalName(ctx.name)) {
    return { rule: 'localhost-name', message: `egress denied: ${where} is ${found.description}, but "${ctx.name}" names this machine and must resolve to loopback` };
  }
  if (found.opensWith === 'allow') {
    if (ctx.name !== undefined || isAllowedHost(canonical, ctx.policy.allow)) return undefined;
    return { rule: 'allow', message: `egress denied: ${canonical} is not in egress.allow (${describeList(ctx.policy.allow)})` };
  }
  if (found.opensWith === 'addresses') {
    if (ctx.policy.addresses.some((range) => inRange(parsed, range))) return undefined;
    const hint = found.rule === 'metadata' ? '' : `; allow it with egress.addresses: ["${canonical}/${parsed.kind() === 'ipv4' ? 32 : 128}"]`;
    return { rule: found.rule, message: `egress denied: ${where} is ${found.description}${hint}` };
  }
  const hint = found.rule === 'unspecified' ? `; connect to 127.0.0.1 with egress.loopback: [${ctx.port}]` : '';
  return { rule: found.rule, message: `egress denied: ${where} is ${found.description}${hint}` };
}

/** What an address is, and which part of a policy (if any) can open it: public ones by name (`allow`), others by `loopback`, `addresses`, or never. */
export type AddressClass =
  | { rule: 'public'; description: string; opensWith: 'allow' }
  | { rule: Exclude<EgressRule, 'allow' | 'localhost-name' | 'invalid-host' | 'invalid-port' | 'scheme'>; description: string; opensWith: 'loopback' | 'addresses' | 'never' };

const PUBLIC: AddressClass = { rule: 'public', description: 'public', opensWith: 'allow' };

/** Classifies one address; IPv6 forms that embed an IPv4 address are judged by the address they embed. */
export function classify(address: ipaddr.IPv4 | ipaddr.IPv6): AddressClass {
  if (address.kind() === 'ipv4') return classifyIPv4(address as ipaddr.IPv4);
  const v6 = address as ipaddr.IPv6;
  const range = v6.range();
  if (range === 'ipv4Mapped' || range === 'rfc6145') {
    // ::ffff:a.b.c.d is a.b.c.d on a dual-stack socket: same destination, same rules.
    const inner = plainIPv4(v6)!;
    const found = classifyIPv4(inner);
    return found === PUBLIC ? found : { ...found, description: `${found.description} (IPv4-mapped ${inner.toString()})` };
  }
  if (range === 'unspecified') return { rule: 'unspecified', description: 'unspecified (it reaches this machine)', opensWith: 'never' };
  if (range === 'loopback') return { rule: 'loopback', description: 'loopback', opensWith: 'loopback' };
  const p = v6.parts;
  if (p.slice(0, 6).every((part) => part === 0)) {
    return { rule: 'embedded-ipv4', description: `IPv4-compatible IPv6 (deprecated) for ${ipv4From(p[6], p[7]).toString()}`, opensWith: 'never' };
  }
  if (range === 'rfc6052' && p[0] === 0x64 && p[1] === 0xff9b && p[2] === 0) return embedded('NAT64', [ipv4From(p[6], p[7])]);
  if (range === '6to4') return embedded('6to4', [ipv4From(p[1], p[2])]);
  // Teredo carries the server's address, and the client's with every bit flipped.
  if (range === 'teredo') return embedded('Teredo', [ipv4From(p[2], p[3]), ipv4From(~p[6] & 0xffff, ~p[7] & 0xffff)]);
  switch (range) {
    case 'unicast':
    case 'amt':
    case 'as112v6':
      return PUBLIC;
    case 'linkLocal':
      return { rule: 'link-local', description: 'link-local', opensWith: 'addresses' };
    case 'uniqueLocal':
      return { rule: 'unique-local', description: 'unique local (private IPv6)', opensWith: 'addresses' };
    case 'multicast':
      return { rule: 'multicast', description: 'multicast', opensWith: 'never' };
    default:
      return { rule: 'reserved', description: `reserved (${range})`, opensWith: 'addresses' };
  }
}

function classifyIPv4(address: ipaddr.IPv4): AddressClass {
  switch (address.range()) {
    case 'unicast':
    case 'amt':
    case 'as112':
      return PUBLIC;
    case 'loopback':
      return { rule: 'loopback', description: 'loopback', opensWith: 'loopback' };
    case 'unspecified':
      return { rule: 'unspecified', description: 'unspecified (it reaches this machine)', opensWith: 'never' };
    case 'private':
      return { rule: 'private', description: 'private', opensWith: 'addresses' };
    case 'linkLocal':
      return address.toString() === '169.254.169.254'
        ? { rule: 'metadata', description: 'the cloud metadata service (link-local)', opensWith: 'addresses' }
        : { rule: 'link-local', description: 'link-local', opensWith: 'addresses' };
    case 'carrierGradeNat':
      return { rule: 'carrier-grade-nat', description: 'carrier-grade NAT (100.64.0.0/10)', opensWith: 'addresses' };
    case 'multicast':
      return { rule: 'multicast', description: 'multicast', opensWith: 'never' };
    case 'broadcast':
      return { rule: 'broadcast', description: 'broadcast', opensWith: 'never' };
    default:
      return { rule: 'reserved', description: 'reserved', opensWith: 'addresses' };
  }
}

/** A translation prefix is as safe as the IPv4 addresses inside it; it never opens a private one. */
function embedded(mechanism: string, inner: ipaddr.IPv4[]): AddressClass {
  for (const address of inner) {
    const found = classifyIPv4(address);
    if (found !== PUBLIC) return { rule: 'embedded-ipv4', description: `${mechanism} for ${address.toString()}, which is ${found.description}`, opensWith: 'never' };
  }
  return PUBLIC;
}

function ipv4From(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

function plainIPv4(address: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | undefined {
  if (address.kind() === 'ipv4') return address as ipaddr.IPv4;
  const v6 = address as ipaddr.IPv6;
  const range = v6.range();
  if (range === 'ipv4Mapped' || range === 'rfc6145') return ipv4From(v6.parts[6], v6.parts[7]);
  return undefined;
}

function inRange(address: ipaddr.IPv4 | ipaddr.IPv6, range: string): boolean {
  let cidr: [ipaddr.IPv4 | ipaddr.IPv6, number];
  try {
    cidr = ipaddr.isValidCIDR(range) ? ipaddr.parseCIDR(range) : [ipaddr.parse(range), range.includes(':') ? 128 : 32];
  } catch {
    return false;
  }
  const candidate = plainIPv4(address) ?? address;
  return candidate.kind() === cidr[0].kind() && candidate.match(cidr);
}

/** `localhost`, `*.localhost` (RFC 6761) and this machine's host name all name this machine. */
export function isLocalName(name: string): boolean {
  const hostname = normalizeHost(os.hostname());
  return name === 'localhost' || name.endsWith('.localhost') || (hostname?.kind === 'name' && hostname.name === name);
}

/** This machine's addresses other than loopback, by canonical text, with their interface's name. Read at every check: interfaces come and go. */
function ownAddresses(): Map<string, string> {
  const own = new Map<string, string>();
  for (const [name, addresses] of Object.entries(os.networkInterfaces())) {
    for (const info of addresses ?? []) {
      if (info.internal) continue;
      try {
        own.set(withoutZone(ipaddr.parse(info.address).toString()), name);
      } catch {
        // Not an address ipaddr.js knows: nothing to compare against.
      }
    }
  }
  return own;
}

function withoutZone(address: string): string {
  const zone = address.indexOf('%');
  return zone === -1 ? address : address.slice(0, zone);
}

function withPort(address: string, port: number): string {
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}

function describeOrigin(canonical: string, ctx: JudgeContext): string {
  if (ctx.name !== undefined) return ` (from "${ctx.name}"${ctx.answerCount > 1 ? `, one of its ${ctx.answerCount} addresses` : ''})`;
  return ctx.given.toLowerCase() === canonical ? '' : ` (from "${ctx.given}")`;
}

function describeList(allow: readonly string[]): string {
  if (allow.length === 0) return 'which is empty';
  const shown = allow.slice(0, 5).join(', ');
  return allow.length > 5 ? `${shown} and ${allow.length - 5} more` : shown;
}
