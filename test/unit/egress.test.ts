/**
 * The egress policy (schema, normalisation, intersection) and the checker, address by address.
 * Names resolve through an injected lookup: nothing here touches the network.
 */
import os from 'node:os';
import { ApplicationFailure } from '@temporalio/common';
import {
  NO_EGRESS,
  checkDestination,
  egressSchema,
  hasEgress,
  isAllowedHost,
  narrowEgress,
  normalizeHost,
  toEgressPolicy,
  type EgressDeniedDetails,
  type EgressLookup,
  type EgressPolicy,
} from '../../src/egress';

/** A resolver from a fixed table; it records what it was asked. */
function tableLookup(table: Record<string, string[]>): EgressLookup & { asked: string[] } {
  const asked: string[] = [];
  const lookup = async (name: string) => {
    asked.push(name);
    const addresses = table[name];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(lookup, { asked });
}

const lookup = tableLookup({
  'api.example.org': ['93.184.216.34'],
  'v6.example.org': ['2606:2800:220:1:248:1893:25c8:1946'],
  'loop.example.org': ['127.0.0.1'],
  'rebind.example.org': ['93.184.216.34', '127.0.0.1'],
  'meta.example.org': ['169.254.169.254'],
  'db.internal': ['10.1.2.3'],
  localhost: ['127.0.0.1', '::1'],
  'app.localhost': ['127.0.0.1'],
  'evil.localhost': ['93.184.216.34'],
});

const policy = (p: Partial<EgressPolicy>): EgressPolicy => ({ ...NO_EGRESS, ...p });

async function denial(host: string, port: number, p: EgressPolicy): Promise<{ message: string; details: EgressDeniedDetails }> {
  try {
    await checkDestination(host, port, p, { lookup });
  } catch (err) {
    expect(err).toBeInstanceOf(ApplicationFailure);
    const failure = err as ApplicationFailure;
    expect(failure.type).toBe('EgressDenied');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).not.toMatch(/\n/);
    return { message: failure.message, details: failure.details?.[0] as EgressDeniedDetails };
  }
  throw new Error(`${host}:${port} was allowed`);
}

const ownAddress = Object.values(os.networkInterfaces())
  .flat()
  .find((info) => info && !info.internal && info.family === 'IPv4')?.address;

describe('egress schema', () => {
  test('accepts names, wildcard subdomains, IP literals, ports and private ranges', () => {
    const parsed = egressSchema.parse({ allow: ['api.github.com', '*.npmjs.org', '93.184.216.34', '[2606:4700::1111]'], loopback: [7233, 8080], addresses: ['10.1.0.0/16', 'fd00::/8', '169.254.169.254'] });
    expect(toEgressPolicy(parsed)).toEqual({ allow: ['api.github.com', '*.npmjs.org', '93.184.216.34', '2606:4700::1111'], loopback: [7233, 8080], addresses: ['10.1.0.0/16', 'fd00::/8', '169.254.169.254/32'] });
    expect(toEgressPolicy(egressSchema.parse({}))).toEqual(NO_EGRESS);
  });

  test('normalises case, trailing dots, IDNs, host bits and duplicates', () => {
    const parsed = egressSchema.parse({ allow: ['API.GitHub.com.', 'api.github.com', 'Bücher.example'], loopback: [9000, 80, 9000], addresses: ['10.1.2.3/16'] });
    expect(toEgressPolicy(parsed)).toEqual({ allow: ['api.github.com', 'xn--bcher-kva.example'], loopback: [80, 9000], addresses: ['10.1.0.0/16'] });
  });

  test.each([
    ['a URL', { allow: ['https://api.github.com'] }, /not a host name/],
    ['a port', { allow: ['api.github.com:443'] }, /not a host name/],
    ['a path', { allow: ['api.github.com/repos'] }, /not a host name/],
    ['a bare wildcard', { allow: ['*'] }, /not a host name/],
    ['a wildcard on a top-level domain', { allow: ['*.com'] }, /not a host name/],
    ['a wildcard in the middle', { allow: ['api.*.com'] }, /not a host name/],
    ['an empty name', { allow: [''] }, /./],
    ['localhost', { allow: ['localhost'] }, /egress\.loopback/],
    ['a loopback literal', { allow: ['127.0.0.1'] }, /egress\.loopback/],
    ['an unknown key', { allow: [], deny: ['x'] }, /unrecognized key/i],
    ['port 0', { loopback: [0] }, /./],
    ['a port above 65535', { loopback: [70000] }, /./],
    ['a fractional port', { loopback: [80.5] }, /./],
    ['a CIDR with a bad prefix', { addresses: ['10.0.0.0/33'] }, /not a CIDR/],
    ['something not a CIDR', { addresses: ['ten.0.0.0/8'] }, /not a CIDR/],
    ['a public range', { addresses: ['8.8.8.0/24'] }, /not inside a private range/],
    ['loopback as a range', { addresses: ['127.0.0.0/8'] }, /not inside a private range/],
    ['everything', { addresses: ['0.0.0.0/0'] }, /not inside a private range/],
    ['all of IPv6', { addresses: ['::/0'] }, /not inside a private range/],
    ['too many hosts', { allow: Array.from({ length: 300 }, (_, i) => `h${i}.example`) }, /./],
  ])('refuses %s', (_what, config, message) => {
    const result = egressSchema.safeParse(config);
    expect(result.success).toBe(false);
    expect(result.error!.issues.map((issue) => issue.message).join('; ')).toMatch(message);
  });

  test('a wildcard matches subdomains only, never the apex or a look-alike', () => {
    const allow = ['*.npmjs.org'];
    expect(isAllowedHost('registry.npmjs.org', allow)).toBe(true);
    expect(isAllowedHost('a.b.npmjs.org', allow)).toBe(true);
    expect(isAllowedHost('npmjs.org', allow)).toBe(false);
    expect(isAllowedHost('evilnpmjs.org', allow)).toBe(false);
    expect(isAllowedHost('npmjs.org.evil.example.org', allow)).toBe(false);
  });

  test('narrowEgress keeps only what both allow', () => {
    const parent = policy({ allow: ['*.example.org', 'api.github.com', '*.npmjs.org'], loopback: [7233, 8080], addresses: ['10.0.0.0/8', 'fd00::/8'] });
    const child = policy({ allow: ['api.example.org', '*.sub.example.org', 'api.github.com', 'npmjs.org', 'other.test'], loopback: [8080, 9000], addresses: ['10.1.0.0/16', '192.168.0.0/16'] });
    expect(narrowEgress(parent, child)).toEqual({ allow: ['api.example.org', '*.sub.example.org', 'api.github.com'], loopback: [8080], addresses: ['10.1.0.0/16'] });
    expect(narrowEgress(child, parent)).toEqual(narrowEgress(parent, child));
    expect(narrowEgress(parent, NO_EGRESS)).toEqual(NO_EGRESS);
    expect(hasEgress(NO_EGRESS)).toBe(false);
    expect(() => NO_EGRESS.allow.push('everything.example.org')).toThrow(TypeError);
    expect(hasEgress(parent)).toBe(true);
  });

  test('normalizeHost reads every spelling as WHATWG URL does', () => {
    for (const spelling of ['127.0.0.1', '127.1', '2130706433', '0x7f000001', '0x7f.1', '0177.0.0.1', '127.0.0.1.']) {
      expect(normalizeHost(spelling)).toEqual({ kind: 'ip', address: '127.0.0.1' });
    }
    expect(normalizeHost('[::ffff:127.0.0.1]')).toEqual({ kind: 'ip', address: '::ffff:7f00:1' });
    expect(normalizeHost('LocalHost.')).toEqual({ kind: 'name', name: 'localhost' });
    for (const bad of ['', 'a b', 'user@host', 'host/path', 'host:80', '[::1', 'fe80::1%eth0', '127%2e0.0.1', '256.1.1.1']) expect(normalizeHost(bad)).toBeUndefined();
  });
});

describe('egress checker', () => {
  test('a name not in egress.allow is refused without being looked up', async () => {
    const before = lookup.asked.length;
    const { message, details } = await denial('evil.example.org', 443, policy({ allow: ['api.github.com'] }));
    expect(message).toBe('egress denied: evil.example.org is not in egress.allow (api.github.com)');
    expect(details).toEqual({ host: 'evil.example.org', port: 443, rule: 'allow' });
    expect(lookup.asked.length).toBe(before);
    expect((await denial('evil.example.org', 443, NO_EGRESS)).message).toBe('egress denied: evil.example.org is not in egress.allow (which is empty)');
  });

  test('an allowed name with public addresses passes, and the checked address is returned', async () => {
    await expect(checkDestination('API.Example.org.', 443, policy({ allow: ['api.example.org'] }), { lookup })).resolves.toEqual({
      host: 'api.example.org',
      port: 443,
      address: '93.184.216.34',
      family: 4,
      addresses: [{ address: '93.184.216.34', family: 4 }],
    });
    await expect(checkDestination('v6.example.org', 443, policy({ allow: ['*.example.org'] }), { lookup })).resolves.toMatchObject({ family: 6 });
  });

  test('localhost is loopback, and says how to open it', async () => {
    const { message, details } = await denial('localhost', 7233, NO_EGRESS);
    expect(message).toBe('egress denied: 127.0.0.1:7233 (from "localhost", one of its 2 addresses) is loopback; allow it with egress.loopback: [7233]');
    expect(details).toEqual({ host: 'localhost', port: 7233, address: '127.0.0.1', rule: 'loopback' });
  });

  test.each([
    ['127.0.0.1', 'loopback'],
    ['127.1', 'loopback'],
    ['2130706433', 'loopback'],
    ['0x7f000001', 'loopback'],
    ['0177.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['[::1]', 'loopback'],
    ['[::ffff:127.0.0.1]', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['0', 'unspecified'],
    ['[::]', 'unspecified'],
    ['[::7f00:1]', 'embedded-ipv4'],
    ['app.localhost', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.5.4', 'private'],
    ['192.168.1.1', 'private'],
    ['[::ffff:10.0.0.1]', 'private'],
    ['169.254.169.254', 'metadata'],
    ['169.254.1.1', 'link-local'],
    ['[fe80::1]', 'link-local'],
    ['100.64.0.1', 'carrier-grade-nat'],
    ['[fd00::1]', 'unique-local'],
    ['[fc00::1]', 'unique-local'],
    ['224.0.0.1', 'multicast'],
    ['[ff02::1]', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['[2001:db8::1]', 'reserved'],
    ['[64:ff9b::a00:1]', 'embedded-ipv4'],
    ['[64:ff9b::7f00:1]', 'embedded-ipv4'],
    ['[2002:7f00:1::1]', 'embedded-ipv4'],
    ['[2002:a9fe:a9fe::1]', 'embedded-ipv4'],
    // Teredo: server 65.54.227.120, client 127.0.0.1 with its bits flipped (80ff:fffe).
    ['[2001:0:4136:e378:8000:63bf:80ff:fffe]', 'embedded-ipv4'],
  ])('%s is refused as %s by default', async (host, rule) => {
    expect((await denial(host, 80, NO_EGRESS)).details.rule).toBe(rule);
  });

  test('even an allowed name is refused when it resolves to loopback or metadata', async () => {
    const allowed = policy({ allow: ['*.example.org'] });
    expect(await denial('loop.example.org', 80, allowed)).toMatchObject({ message: 'egress denied: 127.0.0.1:80 (from "loop.example.org") is loopback; allow it with egress.loopback: [80]' });
    expect(await denial('meta.example.org', 80, allowed)).toMatchObject({ message: 'egress denied: 169.254.169.254:80 (from "meta.example.org") is the cloud metadata service (link-local)', details: { rule: 'metadata', address: '169.254.169.254' } });
  });

  test('a rebinding answer (one public, one loopback) is refused as a whole', async () => {
    const { message, details } = await denial('rebind.example.org', 443, policy({ allow: ['rebind.example.org'] }));
    expect(message).toBe('egress denied: 127.0.0.1:443 (from "rebind.example.org", one of its 2 addresses) is loopback; allow it with egress.loopback: [443]');
    expect(details.rule).toBe('loopback');
  });

  test('a localhost name must resolve to loopback', async () => {
    expect((await denial('evil.localhost', 80, policy({ loopback: [80] }))).details.rule).toBe('localhost-name');
  });

  test('public IP literals need egress.allow; NAT64 and 6to4 of public addresses are public', async () => {
    expect((await denial('93.184.216.34', 443, NO_EGRESS)).message).toBe('egress denied: 93.184.216.34 is not in egress.allow (which is empty)');
    await expect(checkDestination('93.184.216.34', 443, policy({ allow: ['93.184.216.34'] }), { lookup })).resolves.toMatchObject({ address: '93.184.216.34' });
    await expect(checkDestination('[64:ff9b::5db8:d822]', 443, policy({ allow: ['64:ff9b::5db8:d822'] }), { lookup })).resolves.toMatchObject({ family: 6 });
    await expect(checkDestination('[2002:5db8:d822::1]', 443, policy({ allow: ['2002:5db8:d822::1'] }), { lookup })).resolves.toMatchObject({ family: 6 });
  });

  test('loopback opens per port; the unspecified address and a localhost name stay closed elsewhere', async () => {
    const open = policy({ loopback: [7233] });
    for (const host of ['localhost', '127.0.0.1', '[::1]', '2130706433', '[::ffff:127.0.0.1]']) {
      await expect(checkDestination(host, 7233, open, { lookup })).resolves.toMatchObject({ port: 7233 });
    }
    expect((await denial('127.0.0.1', 7234, open)).details.rule).toBe('loopback');
    expect((await denial('0.0.0.0', 7233, open)).message).toBe('egress denied: 0.0.0.0:7233 is unspecified (it reaches this machine); connect to 127.0.0.1 with egress.loopback: [7233]');
    expect((await denial('[64:ff9b::7f00:1]', 7233, open)).details.rule).toBe('embedded-ipv4');
  });

  test('private addresses open by CIDR only, and loopback never does', async () => {
    const open = policy({ allow: ['db.internal'], addresses: ['10.1.0.0/16', '169.254.169.254/32', '127.0.0.0/8'] });
    await expect(checkDestination('db.internal', 5432, open, { lookup })).resolves.toMatchObject({ address: '10.1.2.3' });
    await expect(checkDestination('10.1.200.1', 5432, open, { lookup })).resolves.toMatchObject({ address: '10.1.200.1' });
    await expect(checkDestination('169.254.169.254', 80, open, { lookup })).resolves.toMatchObject({ address: '169.254.169.254' });
    expect((await denial('10.2.0.1', 5432, open)).message).toBe('egress denied: 10.2.0.1:5432 is private; allow it with egress.addresses: ["10.2.0.1/32"]');
    expect((await denial('127.0.0.1', 5432, open)).details.rule).toBe('loopback');
    expect((await denial('[::ffff:10.2.0.1]', 5432, open)).details.rule).toBe('private');
  });

  test("this machine's hostname and own addresses count as this machine", async () => {
    const hostname = os.hostname();
    // The real resolver: the hostname is in /etc/hosts (or resolves to one of this machine's addresses).
    await expect(checkDestination(hostname, 80, NO_EGRESS)).rejects.toMatchObject({ type: 'EgressDenied', details: [expect.objectContaining({ rule: expect.stringMatching(/^(loopback|this-machine)$/) })] });
    await expect(checkDestination(hostname, 80, policy({ loopback: [80] }))).resolves.toMatchObject({ port: 80 });
    if (ownAddress) {
      const { message, details } = await denial(ownAddress, 80, policy({ addresses: ['10.0.0.0/8', '192.168.0.0/16', '172.16.0.0/12', '192.0.2.0/24'] }));
      expect(details.rule).toBe('this-machine');
      expect(message).toContain(`${ownAddress}:80 is this machine's own address`);
      await expect(checkDestination(ownAddress, 80, policy({ loopback: [80] }), { lookup })).resolves.toMatchObject({ address: ownAddress });
    }
  });

  test('bad hosts and ports are refused before anything is looked up', async () => {
    expect((await denial('user@api.example.org', 80, policy({ allow: ['api.example.org'] }))).details.rule).toBe('invalid-host');
    expect((await denial('api.example.org', 0, policy({ allow: ['api.example.org'] }))).details.rule).toBe('invalid-port');
    expect((await denial('api.example.org', 65536, policy({ allow: ['api.example.org'] }))).details.rule).toBe('invalid-port');
  });

  test('a name that does not resolve is a network error, not a refusal', async () => {
    await expect(checkDestination('nowhere.example.org', 80, policy({ allow: ['*.example.org'] }), { lookup })).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });
});
