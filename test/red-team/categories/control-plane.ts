/**
 * The control plane: attempts to reach the Temporal server's gRPC port, a local HTTP server that
 * terminates a running workflow when reached (what reaching the control plane would let an
 * attacker do), abstract and filesystem unix sockets, and the `temporal` CLI itself, from shell
 * (no network) and from http.request in every spelling of loopback, through names resolving to
 * it and through redirects from a server the plan opts in to. The target workflow must still be
 * running at the end, and the trap must have seen nothing.
 */
import path from 'node:path';
import { type Case, attackOutput, reasons, resultCase, shellCase } from '../cases';
import { exists } from '../host';
import type { LocalServer } from '../servers';

export interface ControlTargets {
  /** The dev server's gRPC port. */
  grpcPort: number;
  trap: LocalServer;
  /** A running workflow the trap terminates when reached. */
  target: string;
  /** Whether the target is still running. */
  targetRunning(): Promise<boolean>;
  /** An abstract unix socket (`\0name`) and a filesystem one the test listens on, with what connected. */
  abstractSocket: { name: string; connections: () => number };
  agentSocket: { path: string; connections: () => number };
  /** The `temporal` CLI, readable inside through the plan's `sandbox.read` (undefined: none on this machine). */
  temporalCli?: string;
  ownAddresses: string[];
  hostname: string;
  /** An opted-in server that redirects (`/to?url=`). */
  redirector: LocalServer;
  /** DNS names (egressLookup) and what they resolve to. */
  names: Record<string, string[]>;
  /** Cases left out where this host has nothing for them to find. */
  skipped: string[];
}

/** Whether a request with this case's id reached the trap. */
export const trapped = (trap: LocalServer, id: string) => trap.hits.filter((hit) => hit.includes(`/${id}`));

export function controlShellCases(t: ControlTargets): Case[] {
  const url = (host: string, id: string) => `http://${host}:${t.trap.port}/terminate/${t.target}/${id}`;
  const untrapped = (id: string) => reasons(...trapped(t.trap, id).map((hit): [boolean, string] => [true, `the trap was reached: ${hit}`]));
  const c = (id: string, title: string, attack: string, more: Case['escapes'] = () => []) =>
    shellCase('control-plane', id, title, attack, async (ctx) => [...untrapped(id), ...(await more(ctx))]);
  const said = (pattern: RegExp, why: string) => (ctx: Parameters<Case['escapes']>[0]) => reasons([pattern.test(attackOutput(ctx.outcome)), why]);
  const hexPort = (port: number) => `:${port.toString(16).toUpperCase().padStart(4, '0')} `;
  const [own] = t.ownAddresses;
  const cli = t.temporalCli;
  const grpc = `127.0.0.1:${t.grpcPort}`;
  const onlyIf = (here: boolean, why: string, make: () => Case): Case[] => (here ? [make()] : (t.skipped.push(`control-plane: ${why}`), []));
  const cases: Case[] = [
    c('cp-curl-grpc', 'curl the gRPC port', `curl -sS -m 3 http://${grpc}/ && echo REACHED`, said(/REACHED/, 'the gRPC port answered')),
    c('cp-curl-trap', 'curl the trap', `curl -sS -m 3 ${url('127.0.0.1', 'cp-curl-trap')}`),
    c('cp-curl-trap-v6', 'curl the trap on [::1]', `curl -sS -m 3 -g ${url('[::1]', 'cp-curl-trap-v6')}`),
    c('cp-curl-localhost', 'curl the trap on localhost', `curl -sS -m 3 ${url('localhost', 'cp-curl-localhost')}`),
    ...onlyIf(own !== undefined, 'cp-curl-own-address (this host has no address but loopback)', () =>
      c('cp-curl-own-address', "curl the trap on the machine's own address", `curl -sS -m 3 -g ${url(own.includes(':') ? `[${own}]` : own, 'cp-curl-own-address')}`),
    ),
    c('cp-curl-hostname', "curl the trap by the machine's host name", `curl -sS -m 3 ${url(t.hostname, 'cp-curl-hostname')}`),
    c('cp-devtcp-grpc', "bash's /dev/tcp to the gRPC port", `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${t.grpcPort} && echo CONNECTED'`, said(/CONNECTED/, 'connected to the gRPC port')),
    c('cp-devtcp-trap', "bash's /dev/tcp to the trap, speaking HTTP", `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${t.trap.port} && printf "GET /terminate/${t.target}/cp-devtcp-trap HTTP/1.0\\r\\n\\r\\n" >&3 && cat <&3'`),
    c('cp-python-socket', 'python sockets to the gRPC port and the trap (IPv4 and IPv6)', `python3 - <<'EOF'
import socket
for family, host, port in ((socket.AF_INET, '127.0.0.1', ${t.grpcPort}), (socket.AF_INET6, '::1', ${t.trap.port}), (socket.AF_INET, '127.0.0.1', ${t.trap.port})):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((host, port))
        s.sendall(b"GET /terminate/${t.target}/cp-python-socket HTTP/1.0\\r\\n\\r\\n")
        print("CONNECTED", host, port, s.recv(100))
    except OSError as e:
        print("refused", host, port, e)
EOF`, said(/CONNECTED/, 'a socket connected')),
    c('cp-node-fetch', "node's fetch to the trap", `${process.execPath} -e 'fetch(process.argv[1]).then(r => r.text()).then(t => console.log("REACHED", t), e => console.log("failed", e.cause?.code ?? e.message))' ${url('127.0.0.1', 'cp-node-fetch')}`),
    c('cp-perl-socket', "perl's IO::Socket to the gRPC port", `perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(PeerAddr => "${grpc}", Timeout => 3) or die "refused: $!\\n"; print "CONNECTED\\n"'`, said(/CONNECTED/, 'connected to the gRPC port')),
    c('cp-abstract-socket', 'an abstract unix socket of the host', `python3 - <<'EOF'
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect("\\0${t.abstractSocket.name}")
    s.sendall(b"hello")
    print("CONNECTED")
except OSError as e:
    print("refused", e)
EOF`, () => reasons([t.abstractSocket.connections() > 0, 'the abstract socket was reached'])),
    c('cp-agent-socket', "a unix socket in a host directory (an ssh agent's)", `echo "SSH_AUTH_SOCK=$SSH_AUTH_SOCK"; ls -la ${path.dirname(t.agentSocket.path)}; python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect("${t.agentSocket.path}"); print("CONNECTED")'`, () =>
      reasons([t.agentSocket.connections() > 0, 'the host socket was reached'])),
    ...onlyIf(exists('/var/run/docker.sock') || exists('/run/docker.sock'), 'cp-docker-socket (no Docker socket on this host)', () => c('cp-docker-socket', 'the Docker socket', 'ls -la /var/run/docker.sock /run/docker.sock; curl -sS -m 3 --unix-socket /var/run/docker.sock http://docker/containers/json && echo REACHED', said(/REACHED/, 'the Docker socket answered'))),
    c('cp-proc-net', "the host's listening sockets in /proc/net", 'cat /proc/net/tcp /proc/net/tcp6 /proc/net/unix', (ctx) => {
      const out = attackOutput(ctx.outcome);
      return reasons([out.includes(hexPort(t.grpcPort)) || out.includes(hexPort(t.trap.port)), "the host's listening ports are visible"], [out.includes(t.abstractSocket.name), "the host's abstract socket is visible"]);
    }),
    ...onlyIf(t.ownAddresses.length > 0, 'cp-interfaces (this host has no address but loopback)', () =>
      c('cp-interfaces', "the host's network interfaces and routes", 'ip addr; ip route; cat /proc/net/route /proc/net/dev', (ctx) =>
        reasons(...t.ownAddresses.map((a): [boolean, string] => [attackOutput(ctx.outcome).includes(a), `the host address ${a} is visible`])),
      ),
    ),
  ];
  if (!cli) t.skipped.push('control-plane: cp-temporal-terminate, cp-temporal-list (no temporal CLI on this machine)');
  else {
    const running = async () => reasons([!(await t.targetRunning()), 'the target workflow is no longer running']);
    cases.push(
      c('cp-temporal-terminate', 'the temporal CLI terminates the target over gRPC', `${cli} workflow terminate --address ${grpc} --namespace ${process.env.CADRE_TEST_NAMESPACE ?? 'default'} --workflow-id ${t.target} --reason red-team --command-timeout 5s`, running),
      c('cp-temporal-list', 'the temporal CLI lists workflows', `${cli} workflow list --address ${grpc} --namespace ${process.env.CADRE_TEST_NAMESPACE ?? 'default'} --command-timeout 5s`, said(new RegExp(t.target), 'the CLI listed the running workflows')),
    );
  }
  return cases;
}

/** http.request to the control plane: every loopback spelling, names resolving to it, redirects to it. */
export function controlHttpCases(t: ControlTargets): Case[] {
  const c = (id: string, title: string, url: string, method?: string) =>
    resultCase('control-plane', id, title, { name: 'http_request', args: { url, ...(method && { method, body: { reason: 'red team' } }) } }, /egress denied/, () => [
      ...trapped(t.trap, id).map((hit) => `the trap was reached: ${hit}`),
    ]);
  const trapUrl = (host: string, id: string) => `http://${host}:${t.trap.port}/terminate/${t.target}/${id}`;
  const spellings: [string, string][] = [
    ['localhost', 'localhost'],
    ['LOCALHOST', 'LOCALHOST'],
    ['localhost-dot', 'localhost.'],
    ['sub-localhost', 'cadre.localhost'],
    ['v4', '127.0.0.1'],
    ['v4-short', '127.1'],
    ['v4-decimal', '2130706433'],
    ['v4-hex', '0x7f000001'],
    ['v4-hex-dotted', '0x7f.0.0.1'],
    ['v4-octal', '0177.0.0.1'],
    ['v4-mixed', '0x7f.1'],
    ['v4-other', '127.127.127.127'],
    ['v4-percent', '%31%32%37.0.0.1'],
    ['v4-fullwidth-dots', '127\u30020\u30020\u30021'],
    ['v4-circled', '\u2460\u2461\u2466.0.0.1'],
    ['v6', '[::1]'],
    ['v6-long', '[0:0:0:0:0:0:0:1]'],
    ['v6-mapped', '[::ffff:127.0.0.1]'],
    ['v6-mapped-hex', '[::ffff:7f00:1]'],
    ['v6-compat', '[::127.0.0.1]'],
    ['v6-nat64', '[64:ff9b::7f00:1]'],
    ['v6-6to4', '[2002:7f00:1::]'],
    ['unspecified', '0.0.0.0'],
    ['unspecified-short', '0'],
    ['v6-unspecified', '[::]'],
    ['hostname', t.hostname],
    ...t.ownAddresses.map((a, i): [string, string] => [`own-${i}`, a.includes(':') ? `[${a}]` : a]),
    ...Object.keys(t.names).map((name): [string, string] => [`dns-${name.split('.')[0]}`, name]),
  ];
  const cases = spellings.map(([key, host]) => c(`cp-http-${key}`, `http.request to the trap at ${host}`, trapUrl(host, `cp-http-${key}`)));
  const grpc = (host: string) => `http://${host}:${t.grpcPort}/temporal.api.workflowservice.v1.WorkflowService/TerminateWorkflowExecution`;
  cases.push(
    c('cp-http-grpc', 'http.request POST to the gRPC port (TerminateWorkflowExecution)', grpc('127.0.0.1'), 'POST'),
    c('cp-http-grpc-localhost', 'http.request to the gRPC port on localhost', grpc('localhost'), 'POST'),
    c('cp-http-grpc-v6', 'http.request to the gRPC port on [::1]', grpc('[::1]'), 'POST'),
    c('cp-http-backslash', 'a backslash before @ (WHATWG reads it as /)', `http://127.0.0.1:${t.trap.port}\\@example.com/terminate/${t.target}/cp-http-backslash`),
  );
  const redirect = (id: string, title: string, to: string) => c(id, `a redirect from the opted-in server ${title}`, `http://127.0.0.1:${t.redirector.port}/to?url=${encodeURIComponent(to)}`);
  cases.push(
    redirect('cp-redirect-trap', 'to the trap', trapUrl('127.0.0.1', 'cp-redirect-trap')),
    redirect('cp-redirect-localhost', 'to localhost', trapUrl('localhost', 'cp-redirect-localhost')),
    redirect('cp-redirect-v6', 'to [::1]', trapUrl('[::1]', 'cp-redirect-v6')),
    redirect('cp-redirect-hex', 'to 0x7f000001', trapUrl('0x7f000001', 'cp-redirect-hex')),
    redirect('cp-redirect-grpc', 'to the gRPC port', grpc('127.0.0.1')),
    redirect('cp-redirect-dns', 'to a name resolving to loopback', trapUrl(Object.keys(t.names)[0], 'cp-redirect-dns')),
    redirect('cp-redirect-relative', 'to a scheme-relative URL', `//127.0.0.1:${t.trap.port}/terminate/${t.target}/cp-redirect-relative`),
    redirect('cp-redirect-chain', 'to itself, then to the trap', `http://127.0.0.1:${t.redirector.port}/to?url=${encodeURIComponent(trapUrl('127.0.0.1', 'cp-redirect-chain'))}`),
    redirect('cp-redirect-metadata', 'to the metadata service', 'http://169.254.169.254/latest/meta-data/'),
  );
  cases.push(
    resultCase('control-plane', 'cp-http-userinfo', 'a URL whose userinfo looks like an allowed host', { name: 'http_request', args: { url: `http://example.com@127.0.0.1:${t.trap.port}/terminate/${t.target}/cp-http-userinfo` } }, /egress denied|includes credentials/, () =>
      trapped(t.trap, 'cp-http-userinfo').map((hit) => `the trap was reached: ${hit}`),
    ),
  );
  cases.push(resultCase('control-plane', 'cp-redirect-file', 'a redirect from the opted-in server to file:', { name: 'http_request', args: { url: `http://127.0.0.1:${t.redirector.port}/to?url=${encodeURIComponent('file:///etc/passwd')}` } }, /egress denied: file: URLs/, (ctx) => reasons([/root:/.test(ctx.outcome.text), '/etc/passwd was read'])));
  return cases;
}
