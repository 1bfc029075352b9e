/**
 * What network destinations an agent's tools may reach. Deny by default: a plan names
 * the hosts it needs (`allow`), and opts in to loopback ports and private ranges one by one.
 */
import ipaddr from 'ipaddr.js';
import { z } from 'zod';

export interface EgressPolicy {
  /** Host names (`api.github.com`), wildcard subdomains (`*.npmjs.org`, not the apex) and IP literals. */
  allow: string[];
  /** Ports on this machine (loopback, its own addresses) that may be reached. */
  loopback: number[];
  /** CIDR ranges of private (non-public) addresses that may be reached, e.g. `10.1.0.0/16`. */
  addresses: string[];
}

/** Nothing at all. Frozen, lists included: it is shared, and a push into it would open every sandbox. */
export const NO_EGRESS: EgressPolicy = Object.freeze({ allow: Object.freeze([]), loopback: Object.freeze([]), addresses: Object.freeze([]) }) as unknown as EgressPolicy;

/** Whether a policy opens anything at all (if not, a sandbox needs no proxy). */
export function hasEgress(policy: EgressPolicy | undefined): boolean {
  return !!policy && (policy.allow.length > 0 || policy.loopback.length > 0 || policy.addresses.length > 0);
}

/** A host as the checker sees it: an IP address (canonical text) or a lower-case ASCII name without a trailing dot. */
export type NormalHost = { kind: 'ip'; address: string } | { kind: 'name'; name: string };

const MAX_HOST_LENGTH = 253;
// What a host may spell before WHATWG normalisation; `%`, `@`, `/`, spaces and the like never belong in one.
const HOST_CHARACTERS = /^[\p{L}\p{M}\p{N}._-]+$/u;

/**
 * Normalises a host the way WHATWG URL does (so `2130706433`, `0x7f.1` and `0177.0.0.1` are all
 * `127.0.0.1`, `[::ffff:127.0.0.1]` is `::ffff:7f00:1`, `Bücher.example.` is `xn--bcher-kva.example`),
 * or returns undefined for something that is not a host.
 */
export function normalizeHost(host: string): NormalHost | undefined {
  if (host.length === 0 || host.length > MAX_HOST_LENGTH + 2) return undefined;
  const bracketed = host.startsWith('[') && host.endsWith(']');
  const inner = bracketed ? host.slice(1, -1) : host;
  if (inner.includes(':')) {
    // IPv6 literal; zone ids (`fe80::1%eth0`) are refused, as URLs refuse them.
    if (!ipaddr.IPv6.isValid(inner) || inner.includes('%')) return undefined;
    return { kind: 'ip', address: ipaddr.IPv6.parse(inner).toString() };
  }
  if (bracketed || !HOST_CHARACTERS.test(inner)) return undefined;
  let hostname: string;
  try {
    hostname = new URL(`http://${inner}/`).hostname;
  } catch {
    return undefined;
  }
  if (hostname.endsWith('.')) hostname = hostname.slice(0, -1);
  if (hostname === '' || hostname.endsWith('.') || hostname.length > MAX_HOST_LENGTH) return undefined;
  if (ipaddr.IPv4.isValidFourPartDecimal(hostname)) return { kind: 'ip', address: ipaddr.IPv4.parse(hostname).toString() };
  if (hostname.split('.').some((label) => label.length === 0 || label.length > 63)) return undefined;
  return { kind: 'name', name: hostname };
}

/** An `allow` entry in canonical form: `{ wildcard: true, suffix: 'npmjs.org' }` for `*.npmjs.org`. */
type HostPattern = { wildcard: false; host: string } | { wildcard: true; suffix: string };

function parsePattern(entry: string): HostPattern | undefined {
  const wildcard = entry.startsWith('*.');
  const host = normalizeHost(wildcard ? entry.slice(2) : entry);
  if (!host) return undefined;
  if (!wildcard) return { wildcard: false, host: host.kind === 'ip' ? host.address : host.name };
  // `*.10.0.0.1` means nothing; `*.com` would be every site under a top-level domain.
  if (host.kind === 'ip' || !host.name.includes('.')) return undefined;
  return { wildcard: true, suffix: host.name };
}

function patternText(pattern: HostPattern): string {
  return pattern.wildcard ? `*.${pattern.suffix}` : pattern.host;
}

/** Whether a normalised host (a name or an IP's canonical text) is named by the policy's `allow` list. */
export function isAllowedHost(host: string, allow: readonly string[]): boolean {
  return allow.some((entry) => {
    const pattern = parsePattern(entry);
    if (!pattern) return false;
    return pattern.wildcard ? host.endsWith(`.${pattern.suffix}`) : host === pattern.host;
  });
}

/** `10.1.0.0/16` (or a bare address) as a range; undefined when it is not one. */
export function parseCidr(text: string): [ipaddr.IPv4 | ipaddr.IPv6, number] | undefined {
  try {
    if (ipaddr.isValidCIDR(text)) {
      const [address, bits] = ipaddr.parseCIDR(text);
      // Keep the network address only: `10.1.2.3/16` is `10.1.0.0/16`.
      const network = address.kind() === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(text) : ipaddr.IPv6.networkAddressFromCIDR(text);
      return [network, bits];
    }
    if (ipaddr.IPv4.isValidFourPartDecimal(text) || (text.includes(':') && ipaddr.IPv6.isValid(text) && !text.includes('%'))) {
      const address = ipaddr.parse(text);
      return [address, address.kind() === 'ipv4' ? 32 : 128];
    }
  } catch {
    return undefined;
  }
  return undefined;
}

function cidrText([address, bits]: [ipaddr.IPv4 | ipaddr.IPv6, number]): string {
  return `${address.toString()}/${bits}`;
}

/**
 * The non-public ranges `addresses` may open. Public addresses are reached by name through `allow`;
 * loopback and this machine only per port through `loopback`; unspecified, multicast and broadcast
 * (255.255.255.255, inside 240/4) never, whatever a range says.
 */
const OPENABLE_RANGES = [
  '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16',
  '192.0.0.0/24', '192.0.2.0/24', '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24', '240.0.0.0/4',
  'fc00::/7', 'fe80::/10', 'fec0::/10', '2001:db8::/32', '100::/64', '64:ff9b:1::/48',
].map((text) => ipaddr.parseCIDR(text));

function contains(outer: [ipaddr.IPv4 | ipaddr.IPv6, number], inner: [ipaddr.IPv4 | ipaddr.IPv6, number]): boolean {
  return outer[0].kind() === inner[0].kind() && inner[1] >= outer[1] && inner[0].match(outer);
}

function isOpenableRange(range: [ipaddr.IPv4 | ipaddr.IPv6, number]): boolean {
  return OPENABLE_RANGES.some((openable) => contains(openable, range));
}

const hostPattern = z
  .string()
  .min(1)
  .max(MAX_HOST_LENGTH + 2)
  .superRefine((entry, ctx) => {
    const pattern = parsePattern(entry);
    if (!pattern) {
      ctx.addIssue({ code: 'custom', message: `"${entry}" is not a host name, "*.domain" pattern or IP address (no scheme, port or path)` });
      return;
    }
    if (pattern.wildcard) return;
    if (pattern.host === 'localhost' || pattern.host.endsWith('.localhost') || isLoopbackOrUnspecified(pattern.host)) {
      ctx.addIssue({ code: 'custom', message: `"${entry}" is this machine: open its ports one by one with egress.loopback` });
    }
  });

function isLoopbackOrUnspecified(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.parse(address);
  const plain = parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress() ? (parsed as ipaddr.IPv6).toIPv4Address() : parsed;
  return plain.range() === 'loopback' || plain.range() === 'unspecified';
}

const cidr = z
  .string()
  .min(1)
  .max(64)
  .superRefine((text, ctx) => {
    const range = parseCidr(text);
    if (!range) ctx.addIssue({ code: 'custom', message: `"${text}" is not a CIDR range such as 10.1.0.0/16` });
    else if (!isOpenableRange(range)) {
      ctx.addIssue({
        code: 'custom',
        message: `"${text}" is not inside a private range (10/8, 172.16/12, 192.168/16, 100.64/10, 169.254/16, fc00::/7, fe80::/10, ...): name public hosts in egress.allow, this machine's ports in egress.loopback`,
      });
    }
  });

/** The `egress` section of a plan or config file. */
export const egressSchema = z.strictObject({
  allow: z.array(hostPattern).max(256).optional(),
  loopback: z.array(z.number().int().min(1).max(65535)).max(64).optional(),
  addresses: z.array(cidr).max(64).optional(),
});

export type EgressConfig = z.infer<typeof egressSchema>;

/** A parsed `egress` section as a policy, in canonical form (lower case, punycode, network addresses), without duplicates. */
export function toEgressPolicy(parsed: EgressConfig | undefined): EgressPolicy {
  const allow = (parsed?.allow ?? []).map((entry) => parsePattern(entry)).filter((p): p is HostPattern => p !== undefined).map(patternText);
  const addresses = (parsed?.addresses ?? []).map((text) => parseCidr(text)).filter((r) => r !== undefined).map(cidrText);
  return { allow: unique(allow), loopback: unique(parsed?.loopback ?? []).sort((a, b) => a - b), addresses: unique(addresses) };
}

/** The intersection of two policies: for a child that may be only as open as its parent, or stricter. */
export function narrowEgress(a: EgressPolicy, b: EgressPolicy): EgressPolicy {
  const allow: string[] = [];
  for (const left of a.allow.map(parsePattern)) {
    for (const right of b.allow.map(parsePattern)) {
      const both = left && right && intersectPatterns(left, right);
      if (both) allow.push(patternText(both));
    }
  }
  const loopback = a.loopback.filter((port) => b.loopback.includes(port));
  const addresses: string[] = [];
  for (const left of a.addresses.map(parseCidr)) {
    for (const right of b.addresses.map(parseCidr)) {
      if (!left || !right) continue;
      // Two CIDR ranges are nested or disjoint: the intersection is the smaller one, or nothing.
      if (contains(left, right)) addresses.push(cidrText(right));
      else if (contains(right, left)) addresses.push(cidrText(left));
    }
  }
  return { allow: unique(allow), loopback: unique(loopback).sort((x, y) => x - y), addresses: unique(addresses) };
}

function intersectPatterns(left: HostPattern, right: HostPattern): HostPattern | undefined {
  if (!left.wildcard && !right.wildcard) return left.host === right.host ? left : undefined;
  if (!left.wildcard && right.wildcard) return left.host.endsWith(`.${right.suffix}`) ? left : undefined;
  if (left.wildcard && !right.wildcard) return right.host.endsWith(`.${left.suffix}`) ? right : undefined;
  if (left.wildcard && right.wildcard) {
    if (left.suffix === right.suffix || left.suffix.endsWith(`.${right.suffix}`)) return left;
    if (right.suffix.endsWith(`.${left.suffix}`)) return right;
  }
  return undefined;
}

function unique<T>(values: T[]): T[] {
  return [...new Set(values)];
}
