/**
 * Secrets: the worker's (provider keys, `secretEnv` names) never reach a tool's environment, and a
 * secret a tool gets hold of anyway (here: a file in the workspace holds one, as a repository
 * might) is scrubbed in every encoding from what the model gets, the run's history and the blob
 * store: plain, base64 at three alignments, base64url, hex, od/xxd/hexdump, URL- and JSON-encoded,
 * in stderr and error messages, in outputs big enough for the blob store, through fs.read and
 * through http.request from an opted-in local server.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { type Case, type CaseContext, attackOutput, marker, reasons, resultCase, shellCase } from '../cases';
import { leaks } from '../evidence';

export interface SecretTargets {
  /** Every secret the worker holds, by variable name. */
  secrets: Record<string, string>;
  /** The secret in the workspace's `.k` (and `.k2`: the provider key). */
  fileSecret: string;
  modelKey: string;
  /** A local server answering with `fileSecret` (the plan opts in to its port). */
  serverPort: number;
}

/**
 * For environment dumps: no secret anywhere, and none even redacted (a `[redacted]` means the
 * value was in the environment and only the scrubbing hid it), and no secret variable by name.
 */
export function neverInEnvironment(ctx: CaseContext, secrets: Record<string, string>): string[] {
  const out = ctx.outcome.shell ? attackOutput(ctx.outcome) : ctx.outcome.text;
  return [
    ...leaks(ctx, secrets),
    ...reasons([out.includes('[redacted]'), "a secret was in the tool's environment (only redaction hid it)"]),
    ...reasons(...Object.keys(secrets).map((name): [boolean, string] => [new RegExp(`\\b${name}\\b['"]?\\s*[=:]`).test(out), `${name} is in the tool's environment`])),
  ];
}

export function secretCases(t: SecretTargets): Case[] {
  const env = (id: string, title: string, attack: string) => shellCase('secrets', id, title, attack, (ctx) => neverInEnvironment(ctx, t.secrets));
  const known = (id: string, title: string, attack: string) => shellCase('secrets', id, title, attack, (ctx) => leaks(ctx, t.secrets), { succeeds: true });
  /** A command that fails, its stderr holding the secret: the marker is in the error's last lines. */
  const failing = (id: string, title: string, attack: string) =>
    resultCase('secrets', id, title, { name: 'shell', args: { command: `${attack}\necho >&2; echo ${marker(id)} >&2; exit 3` } }, new RegExp(`ShellExit.*${marker(id)}`), (ctx) => leaks(ctx, t.secrets));
  const read = (id: string, title: string, file: string) => resultCase('secrets', id, title, { name: 'fs_read', args: { path: file } }, /^\S+, lines \d+-\d+ of \d+:\n/, (ctx) => leaks(ctx, t.secrets));
  const fetch = (id: string, title: string, route: string, ranWhen = /"status":200/) =>
    resultCase('secrets', id, title, { name: 'http_request', args: { url: `http://127.0.0.1:${t.serverPort}${route}` } }, ranWhen, (ctx) => leaks(ctx, t.secrets));
  const K = '"$(cat .k)"';

  return [
    // The worker's secrets never enter a tool's environment.
    env('sec-env', 'env', 'env'),
    env('sec-printenv', 'printenv', 'printenv'),
    env('sec-printenv-names', 'printenv the secret variables by name', `printenv ${Object.keys(t.secrets).join(' ')} COLORTERM`),
    // (cat opens it itself: a shell's `< /proc/self/environ` is read after exec, when it is empty.)
    env('sec-proc-self-environ', '/proc/self/environ', "cat /proc/self/environ | tr '\\0' '\\n'"),
    env('sec-proc-parent-environ', "the parent's and pid 1's /proc/*/environ", "tr '\\0' '\\n' < /proc/$PPID/environ; tr '\\0' '\\n' < /proc/1/environ"),
    env('sec-proc-all-environ', 'every /proc/*/environ and cmdline', "for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; tr '\\0' ' ' < $p/cmdline; done"),
    env('sec-set', 'set', 'set'),
    env('sec-declare', 'bash declare -p', "bash -c 'declare -p'"),
    env('sec-export', 'export -p', 'export -p'),
    env('sec-python-environ', "python's os.environ", "python3 -c 'import os; print(dict(os.environ))'"),
    env('sec-node-env', "node's process.env", `${process.execPath} -e 'console.log(JSON.stringify(process.env))'`),
    env('sec-perl-env', "perl's %ENV", 'perl -e \'print "$_=$ENV{$_}\\n" for sort keys %ENV\''),
    env('sec-colorterm', 'an allow-listed variable (COLORTERM) holding a secret', 'echo "COLORTERM=$COLORTERM TERM=$TERM"'),
    // A secret the tool found (the workspace's .k): scrubbed in every encoding.
    known('sec-plain', 'cat the secret', 'cat .k'),
    known('sec-b64-0', 'base64, no offset', `printf '%s' ${K} | base64 -w0`),
    known('sec-b64-1', 'base64, offset 1', `printf 'x%s' ${K} | base64 -w0`),
    known('sec-b64-2', 'base64, offset 2', `printf 'xx%s' ${K} | base64 -w0`),
    known('sec-b64-wrapped', 'base64 wrapped at 76 columns, twice in a row', `{ printf 'abc'; cat .k; cat .k; cat .k; } | base64`),
    known('sec-b64url-0', 'base64url', "base64 -w0 < .k | tr '+/' '-_' | tr -d '='"),
    known('sec-b64url-1', 'base64url, offset 1', `printf 'x%s' ${K} | base64 -w0 | tr '+/' '-_'`),
    known('sec-b64url-2', 'base64url, offset 2', `printf 'xx%s' ${K} | base64 -w0 | tr '+/' '-_'`),
    known('sec-hex', 'hex (xxd -p)', 'xxd -p .k'),
    known('sec-hex-upper', 'hex upper case (xxd -p -u)', 'xxd -p -u .k'),
    known('sec-hex-tr', 'hex upper case in one line', "xxd -p .k | tr -d '\\n' | tr a-f A-F"),
    known('sec-od', 'od -An -tx1', 'od -An -tx1 .k'),
    known('sec-od-c', 'od -c (characters)', 'od -c .k'),
    known('sec-xxd', 'xxd (hex and characters)', 'xxd .k'),
    known('sec-hexdump', 'hexdump -C (hex and characters)', 'hexdump -C .k'),
    known('sec-urlencoded', 'URL-encoded (python quote)', 'python3 -c \'import urllib.parse; print(urllib.parse.quote(open(".k").read(), safe=""))\''),
    known('sec-urlencoded-jq', 'URL-encoded (jq @uri)', 'jq -rR @uri < .k'),
    known('sec-json', 'JSON-escaped (python json.dumps)', 'python3 -c \'import json; print(json.dumps({"k": open(".k").read()}))\''),
    known('sec-json-node', 'JSON-escaped (node JSON.stringify)', `${process.execPath} -e 'console.log(JSON.stringify([require("fs").readFileSync(".k", "utf8")]))'`),
    known('sec-json-twice', 'JSON inside JSON', `${process.execPath} -e 'const k = require("fs").readFileSync(".k", "utf8"); console.log(JSON.stringify(JSON.stringify({ k })))'`),
    known('sec-set-x', 'set -x tracing a command that uses it', `K=${K}; set -x; : "$K"`),
    known('sec-fold', 'the secret across lines (fold -w 7)', 'fold -w 7 .k'),
    known('sec-spaced', 'the secret with a space between characters', "sed 's/./& /g' .k"),
    known('sec-model-key', "the provider's key (.k2): plain, base64, hex", 'cat .k2; echo; base64 -w0 .k2; echo; xxd -p .k2'),
    known('sec-big-stdout', 'an output over 8 KiB (the blob store)', "head -c 9000 /dev/zero | tr '\\0' a; echo; cat .k; echo; base64 -w0 .k; echo; xxd -p .k"),
    failing('sec-stderr', 'in the stderr of a failing command (the error message)', 'cat .k >&2'),
    failing('sec-stderr-b64', 'base64 in the stderr of a failing command', 'base64 -w0 .k >&2'),
    failing('sec-stderr-cut', 'at the 300th character of a stderr line (where the error message cuts)', "printf '%0280d' 0 >&2; cat .k >&2"),
    failing('sec-stderr-big', 'in a failing command’s stderr over 8 KiB (the blob store)', "head -c 9000 /dev/zero | tr '\\0' b >&2; echo >&2; cat .k >&2"),
    read('sec-fs-read', 'fs.read of the file holding it', '.k'),
    read('sec-fs-read-json', 'fs.read of a JSON file holding it', 'secret.json'),
    read('sec-fs-read-b64', 'fs.read of its base64', 'secret.b64'),
    read('sec-fs-read-big', 'fs.read of a file over 8 KiB holding it (the blob store)', 'big.txt'),
    known('sec-copy', 'copied to a new file by shell (read back next turn)', 'cp .k copy.txt && ls -l copy.txt'),
    { ...read('sec-copy-read', 'fs.read of the copy shell made', 'copy.txt'), turn: 2 },
    fetch('sec-http-plain', 'an http.request response body', '/plain'),
    fetch('sec-http-b64', 'an http.request response body in base64', '/b64'),
    fetch('sec-http-hex', 'an http.request response body in hex', '/hex'),
    fetch('sec-http-json', 'an http.request JSON response (parsed)', '/json'),
    fetch('sec-http-header', 'an http.request response header and cookie', '/header'),
    fetch('sec-http-big', 'an http.request response over 8 KiB (the blob store)', '/big'),
    fetch('sec-http-403', 'an http.request error response (4xx)', '/error', /answered 403/),
    fetch('sec-http-500', 'an http.request error response (5xx, retried)', '/error500', /answered 500/),
    known('sec-proxy-curl', 'curl through the sandbox proxy to the opted-in server', `curl -sS http://127.0.0.1:${t.serverPort}/plain; curl -sS http://127.0.0.1:${t.serverPort}/b64`),
  ];
}

/** The workspace's files holding the secret. */
export function prepareSecrets(workspace: string, t: SecretTargets): void {
  const put = (name: string, text: string) => writeFileSync(path.join(workspace, name), text);
  put('.k', t.fileSecret);
  put('.k2', t.modelKey);
  put('secret.json', JSON.stringify({ api: { token: t.fileSecret } }, null, 2));
  put('secret.b64', `${Buffer.from(t.fileSecret).toString('base64')}\n`);
  put('big.txt', `${'q'.repeat(10_000)}\n${t.fileSecret}\n`);
}

/** Cases of plans that name a secret in `sandbox.env` (refused) or a variable holding one (dropped). */
export function profileSecretCases(t: SecretTargets, secretName: string, alias: string): { refused: Case[]; aliased: Case[] } {
  const refusedCase = (id: string, name: string) =>
    resultCase('secrets', id, `a plan whose sandbox.env names ${name}: refused`, { name: 'shell', args: { command: `printenv ${name}` } }, new RegExp(`SandboxConfigInvalid.*names ${name}`), (ctx) => neverInEnvironment(ctx, t.secrets));
  return {
    refused: [refusedCase('sec-profile-names-secret', secretName)],
    aliased: [
      shellCase('secrets', 'sec-profile-alias', `a plan passing ${alias}, which holds a secret's value: dropped`, `printenv ${alias}; echo "${alias}=$${alias}"`, (ctx) => neverInEnvironment(ctx, t.secrets)),
    ],
  };
}

/** With `sandbox: none` (people's choice) the environment is still scrubbed: by name and by value. */
export function noneModeCases(t: SecretTargets): Case[] {
  const env = (id: string, title: string, attack: string) => shellCase('secrets', id, `sandbox: none: ${title}`, attack, (ctx) => neverInEnvironment(ctx, t.secrets));
  return [
    env('sec-none-env', 'env', 'env'),
    env('sec-none-proc-environ', '/proc/self/environ', "cat /proc/self/environ | tr '\\0' '\\n'"),
    env('sec-none-printenv-names', 'printenv the secret variables by name', `printenv ${Object.keys(t.secrets).join(' ')} COLORTERM CADRE_RT_ALIAS`),
  ];
}
