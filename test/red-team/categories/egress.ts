/**
 * Egress: http.request to the metadata service, private, CGNAT, ULA, link-local, IPv4-mapped,
 * NAT64/6to4 forms, this machine's own addresses and name, other schemes, names that resolve to
 * any of them; shell with no network at all; and shell through the sandbox's proxy when a plan
 * opens one loopback port: that port works (a control), nothing else does, not even direct.
 */
import { type Case, attackOutput, reasons, resultCase, shellCase } from '../cases';
import type { LocalServer } from '../servers';
import { trapped } from './control-plane';

export interface EgressTargets {
  trap: LocalServer;
  /** The port the proxy batch opens, and what it answers. */
  open: LocalServer;
  openBody: string;
  /** An opted-in redirector in the proxy batch. */
  redirector: LocalServer;
  grpcPort: number;
  ownAddresses: string[];
  hostname: string;
  /** Names (egressLookup) resolving to metadata, private, ULA and rebinding answers. */
  names: Record<string, string[]>;
  /** A name resolving to 127.0.0.1, allowed in the proxy batch. */
  loopName: string;
  /** Cases left out where this host has nothing for them to find. */
  skipped: string[];
  temporalCli?: string;
  target: string;
  targetRunning(): Promise<boolean>;
}

/** The case only where this host has what it looks for. */
function onlyIf(t: EgressTargets, here: boolean, why: string, make: () => Case): Case[] {
  if (here) return [make()];
  t.skipped.push(`egress: ${why}`);
  return [];
}

export function egressHttpCases(t: EgressTargets): Case[] {
  const untrapped = (id: string) => trapped(t.trap, id).map((hit) => `the trap was reached: ${hit}`);
  const c = (id: string, title: string, url: string, ranWhen = /egress denied/) => resultCase('egress', id, title, { name: 'http_request', args: { url } }, ranWhen, () => untrapped(id));
  const at = (host: string, id: string) => `http://${host}/${id}`;
  const own = (host: string, id: string) => `http://${host}:${t.trap.port}/${id}`;
  const hosts: [string, string, string][] = [
    ['eg-metadata', 'the metadata service', '169.254.169.254'],
    ['eg-metadata-decimal', 'the metadata service as a decimal number', '2852039166'],
    ['eg-metadata-hex', 'the metadata service in hex', '0xa9fea9fe'],
    ['eg-metadata-octal', 'the metadata service in octal', '0251.0376.0251.0376'],
    ['eg-metadata-dot', 'the metadata service with a trailing dot', '169.254.169.254.'],
    ['eg-metadata-mapped', 'the metadata service IPv4-mapped', '[::ffff:169.254.169.254]'],
    ['eg-metadata-nat64', 'the metadata service through NAT64', '[64:ff9b::a9fe:a9fe]'],
    ['eg-metadata-6to4', 'the metadata service through 6to4', '[2002:a9fe:a9fe::]'],
    ['eg-metadata-compat', 'the metadata service IPv4-compatible', '[::a9fe:a9fe]'],
    ['eg-metadata-aws6', "AWS's IPv6 metadata service (ULA)", '[fd00:ec2::254]'],
    ['eg-metadata-alibaba', "Alibaba's metadata service (CGNAT)", '100.100.100.200'],
    ['eg-metadata-gcp', "GCP's metadata name", 'metadata.google.internal'],
    ['eg-private-10', 'a 10/8 address', '10.0.0.1'],
    ['eg-private-172', 'a 172.16/12 address', '172.16.0.1'],
    ['eg-private-192', 'a 192.168/16 address', '192.168.1.1'],
    ['eg-cgnat', 'a CGNAT address', '100.64.0.1'],
    ['eg-ula', 'a unique local IPv6 address', '[fd12:3456::1]'],
    ['eg-ula-fc', 'an fc00::/7 address', '[fc00::1]'],
    ['eg-link-local6', 'an IPv6 link-local address', '[fe80::1]'],
    ['eg-link-local4', 'an IPv4 link-local address', '169.254.1.1'],
    ['eg-mapped-private', 'a private address IPv4-mapped', '[::ffff:10.0.0.1]'],
    ['eg-mapped-private-hex', 'a private address IPv4-mapped in hex', '[::ffff:c0a8:101]'],
    ['eg-nat64-private', 'a private address through NAT64', '[64:ff9b::a00:1]'],
    ['eg-nat64-local', 'a private address through the local-use NAT64 prefix', '[64:ff9b:1::a00:1]'],
    ['eg-6to4-private', 'a private address through 6to4', '[2002:c0a8:101::]'],
    ['eg-teredo-private', 'a private address through Teredo', '[2001:0:a00:1::f5ff:fffe]'],
    ['eg-multicast', 'a multicast address', '224.0.0.1'],
    ['eg-broadcast', 'the broadcast address', '255.255.255.255'],
    ['eg-reserved', 'a reserved (240/4) address', '240.0.0.1'],
    ['eg-benchmark', 'a benchmarking (198.18/15) address', '198.18.0.1'],
    ['eg-public-name', 'a public name not in egress.allow', 'example.com'],
    ['eg-public-ip', 'a public address not in egress.allow', '93.184.216.34'],
    ...Object.keys(t.names).map((name): [string, string, string] => [`eg-dns-${name.split('.')[0]}`, `a name resolving to ${t.names[name].join(', ')}`, name]),
  ];
  const cases = hosts.map(([id, title, host]) => c(id, `http.request to ${title}`, at(host, id)));
  cases.push(
    c('eg-own-zero', 'http.request to 0.0.0.0 (this machine)', own('0.0.0.0', 'eg-own-zero')),
    c('eg-own-hostname', "http.request to this machine's name", own(t.hostname, 'eg-own-hostname')),
    ...t.ownAddresses.map((a, i) => c(`eg-own-address-${i}`, `http.request to this machine's address ${a}`, own(a.includes(':') ? `[${a}]` : a, `eg-own-address-${i}`))),
    c('eg-scheme-file', 'http.request to a file: URL', 'file:///etc/passwd', /egress denied|file: URLs|not supported|unknown scheme|Invalid/i),
    c('eg-scheme-ftp', 'http.request to an ftp: URL on this machine', `ftp://127.0.0.1:${t.trap.port}/eg-scheme-ftp`, /egress denied|ftp: URLs|not supported|unknown scheme/i),
    c('eg-scheme-gopher', 'http.request to a gopher: URL on this machine', `gopher://127.0.0.1:${t.trap.port}/_GET%20/eg-scheme-gopher`, /egress denied|gopher: URLs|not supported|unknown scheme/i),
    c('eg-ipv6-zone', 'an IPv6 link-local address with a zone', `http://[fe80::1%25lo]:${t.trap.port}/eg-ipv6-zone`, /egress denied|Invalid|bad parameters/i),
  );
  return cases;
}

/** Shell without any egress: no network at all, whatever the destination. */
export function egressShellCases(t: EgressTargets): Case[] {
  const c = (id: string, title: string, attack: string) =>
    shellCase('egress', id, title, attack, (ctx) => [...trapped(t.trap, id).map((hit) => `the trap was reached: ${hit}`), ...reasons([/REACHED/.test(attackOutput(ctx.outcome)), 'a connection was made'])]);
  const curl = (url: string) => `curl -sS -m 3 -g '${url}' && echo REACHED`;
  const [own] = t.ownAddresses;
  return [
    c('eg-sh-metadata', 'curl the metadata service', curl('http://169.254.169.254/latest/meta-data/')),
    c('eg-sh-private', 'curl a private address', curl('http://10.0.0.1/')),
    c('eg-sh-public', 'curl a public name', curl('http://example.com/')),
    c('eg-sh-public-ip', 'curl a public address', curl('http://93.184.216.34/')),
    ...onlyIf(t, own !== undefined, 'eg-sh-own-address (this host has no address but loopback)', () => c('eg-sh-own-address', "curl this machine's own address", curl(`http://${own.includes(':') ? `[${own}]` : own}:${t.trap.port}/eg-sh-own-address`))),
    c('eg-sh-hostname', "curl this machine's name", curl(`http://${t.hostname}:${t.trap.port}/eg-sh-hostname`)),
    c('eg-sh-dns', 'resolve a name (no resolver, no network)', 'getent hosts example.com && echo REACHED; python3 -c \'import socket; print(socket.gethostbyname("example.com")); print("REACHED")\''),
    c('eg-sh-udp', 'send UDP to a public resolver', 'python3 -c \'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"x", ("8.8.8.8", 53)); print("REACHED")\''),
    c('eg-sh-route', 'a default route', "ip route 2>&1; cat /proc/net/route | awk 'NR > 1 && $2 == \"00000000\" { print \"REACHED default route\" }'"),
    c('eg-sh-proxy-env', 'a proxy variable of its own pointing at the trap', `HTTP_PROXY=http://127.0.0.1:${t.trap.port} http_proxy=http://127.0.0.1:${t.trap.port} ${curl(`http://example.com/eg-sh-proxy-env`)}`),
  ];
}

/**
 * Shell behind the sandbox's proxy, in a plan opening one loopback port (and the redirector's):
 * the open port is reachable (a control, not a case); the trap, the gRPC port, metadata are
 * refused in every spelling and by every trick, and nothing goes around the proxy.
 */
export function egressProxyCases(t: EgressTargets): { control: Case; cases: Case[] } {
  const untrapped = (id: string) => trapped(t.trap, id).map((hit) => `the trap was reached: ${hit}`);
  const c = (id: string, title: string, attack: string, more: Case['escapes'] = () => []) =>
    shellCase('egress', id, title, attack, async (ctx) => [...untrapped(id), ...reasons([/REACHED/.test(attackOutput(ctx.outcome)), 'a connection was made']), ...(await more(ctx))]);
  const trap = (host: string, id: string) => `http://${host}:${t.trap.port}/${id}`;
  // The answer is shown (the proxy's refusal says why); REACHED only when it came from the trap.
  const curl = (url: string, flags = '') => `out=$(curl -sS -m 5 -g ${flags} '${url}' 2>&1); echo "$out"; case "$out" in *'trap reached'*) echo REACHED;; esac`;
  const openUrl = `http://127.0.0.1:${t.open.port}/`;
  const [own] = t.ownAddresses;
  const control = shellCase('egress', 'eg-proxy-open', 'the opened loopback port through the proxy (control)', `curl -sS -m 5 ${openUrl}`, (ctx) => reasons([!attackOutput(ctx.outcome).includes(t.openBody), 'the opened port did not answer through the proxy']));
  const raw = (request: string) => `python3 - <<'EOF'
import socket
s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
s.sendall(${JSON.stringify(request)}.encode())
data = b""
try:
    while True:
        chunk = s.recv(4096)
        if not chunk: break
        data += chunk
except OSError:
    pass
print(data.decode(errors="replace"))
if b"trap reached" in data: print("REACHED")
EOF`;
  const cases: Case[] = [
    c('eg-proxy-trap', 'the trap through the proxy', curl(trap('127.0.0.1', 'eg-proxy-trap'))),
    c('eg-proxy-trap-connect', 'the trap through a CONNECT tunnel', curl(trap('127.0.0.1', 'eg-proxy-trap-connect'), '-p')),
    c('eg-proxy-localhost', 'the trap on localhost', curl(trap('localhost', 'eg-proxy-localhost'))),
    c('eg-proxy-v6', 'the trap on [::1]', curl(trap('[::1]', 'eg-proxy-v6'))),
    c('eg-proxy-mapped', 'the trap on [::ffff:127.0.0.1]', curl(trap('[::ffff:127.0.0.1]', 'eg-proxy-mapped'))),
    c('eg-proxy-decimal', 'the trap on 2130706433', curl(trap('2130706433', 'eg-proxy-decimal'))),
    c('eg-proxy-zero', 'the trap on 0.0.0.0', curl(trap('0.0.0.0', 'eg-proxy-zero'))),
    ...onlyIf(t, own !== undefined, 'eg-proxy-own (this host has no address but loopback)', () => c('eg-proxy-own', "the trap on this machine's address", curl(trap(own.includes(':') ? `[${own}]` : own, 'eg-proxy-own')))),
    c('eg-proxy-hostname', "the trap on this machine's name", curl(trap(t.hostname, 'eg-proxy-hostname'))),
    c('eg-proxy-dns', 'the trap through an allowed name resolving to loopback', curl(trap(t.loopName, 'eg-proxy-dns'))),
    // -f: the proxy's own refusal is an HTTP answer (403), not a connection to the destination.
    c('eg-proxy-grpc', 'the gRPC port through a CONNECT tunnel', `curl -sSf -m 5 -p http://127.0.0.1:${t.grpcPort}/ && echo REACHED`),
    c('eg-proxy-metadata', 'the metadata service', `curl -sSf -m 5 http://169.254.169.254/latest/meta-data/ && echo REACHED`),
    c('eg-proxy-metadata-connect', 'the metadata service through CONNECT', `curl -sSf -m 5 -p http://169.254.169.254/ && echo REACHED`),
    c('eg-proxy-itself', 'the proxy asked for its own port', `curl -sSf -m 5 -x http://127.0.0.1:3128 http://127.0.0.1:3128/ && echo REACHED`),
    c('eg-proxy-host-header', "the open port with the trap's Host header", `curl -sS -m 5 -H 'Host: 127.0.0.1:${t.trap.port}' ${openUrl}eg-proxy-host-header`),
    c('eg-proxy-absolute-mismatch', 'an absolute URL to the trap with the open port as Host', raw(`GET http://127.0.0.1:${t.trap.port}/eg-proxy-absolute-mismatch HTTP/1.1\r\nHost: 127.0.0.1:${t.open.port}\r\nConnection: close\r\n\r\n`)),
    c('eg-proxy-pipelined', 'a second, pipelined request to the trap after one to the open port', raw(`GET ${openUrl} HTTP/1.1\r\nHost: 127.0.0.1:${t.open.port}\r\n\r\nGET http://127.0.0.1:${t.trap.port}/eg-proxy-pipelined HTTP/1.1\r\nHost: 127.0.0.1:${t.trap.port}\r\nConnection: close\r\n\r\n`)),
    c('eg-proxy-smuggle', 'a request smuggled in a chunked body', raw(`POST ${openUrl} HTTP/1.1\r\nHost: 127.0.0.1:${t.open.port}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET http://127.0.0.1:${t.trap.port}/eg-proxy-smuggle HTTP/1.1\r\nHost: 127.0.0.1:${t.trap.port}\r\nConnection: close\r\n\r\n`)),
    c('eg-proxy-origin-form', 'an origin-form request to the proxy (no absolute URL)', raw(`GET /eg-proxy-origin-form HTTP/1.1\r\nHost: 127.0.0.1:${t.trap.port}\r\nConnection: close\r\n\r\n`)),
    c('eg-proxy-socket', "the proxy's unix socket directly", `${curl(trap('127.0.0.1', 'eg-proxy-socket'), '--unix-socket /run/cadre/egress.sock')}; ls -la /run/cadre`),
    c('eg-proxy-redirect', 'a redirect from an opted-in server to the trap (curl -L)', curl(`http://127.0.0.1:${t.redirector.port}/to?url=${encodeURIComponent(trap('127.0.0.1', 'eg-proxy-redirect'))}`, '-L')),
    c('eg-proxy-noproxy-open', 'the open port directly (--noproxy)', `curl -sS -m 3 --noproxy '*' ${openUrl} && echo REACHED`),
    c('eg-proxy-noproxy-trap', 'the trap directly (--noproxy)', curl(trap('127.0.0.1', 'eg-proxy-noproxy-trap'), "--noproxy '*'")),
    c('eg-proxy-direct-socket', 'a python socket straight to the open port and the trap', `python3 - <<'EOF'
import socket
for port in (${t.open.port}, ${t.trap.port}):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3)
        print("REACHED", port)
    except OSError as e:
        print("refused", port, e)
EOF`),
    c('eg-proxy-public', 'a public name not in egress.allow', `curl -sSf -m 5 http://example.com/ && echo REACHED`),
  ];
  if (!t.temporalCli) t.skipped.push('egress: eg-proxy-temporal-cli (no temporal CLI on this machine)');
  else {
    cases.push(
      c('eg-proxy-temporal-cli', 'the temporal CLI over gRPC through the proxy (HTTPS_PROXY)', `HTTPS_PROXY=$HTTP_PROXY https_proxy=$HTTP_PROXY grpc_proxy=$HTTP_PROXY ${t.temporalCli} workflow terminate --address 127.0.0.1:${t.grpcPort} --namespace ${process.env.CADRE_TEST_NAMESPACE ?? 'default'} --workflow-id ${t.target} --reason red-team --command-timeout 5s`, async () =>
        reasons([!(await t.targetRunning()), 'the target workflow is no longer running'])),
    );
  }
  return { control, cases };
}
