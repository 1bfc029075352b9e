/**
 * Everything the red team aims at, made once for the suite: the worker's secrets (in its
 * environment before it starts), local servers, workflows to terminate, sockets, names that
 * resolve to loopback and metadata, and the host paths it must leave alone. `release` undoes it all.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promises as dns } from 'node:dns';
import type { CadreClient } from '../../src/client/client';
import { findTemporalCli } from '../../src/worker/temporal-cli';
import type { EgressLookup } from '../../src/egress';
import { compile, tempWorkspace, uniqueId } from '../support/harness';
import { type Bystander, type Outside, bystander, homeSentinel, outsideDir, ownAddresses, random } from './host';
import { type LocalServer, startOpenServer, startRedirector, startSecretServer, startTrap } from './servers';

/** Secrets the worker holds: set in its environment before it reads it (its first tool call). */
export interface WorkerSecrets {
  modelKey: string;
  /** name → value, every one of them (provider keys and a `secretEnv` name). */
  all: Record<string, string>;
  /** A `secretEnv` name. */
  secretName: string;
  /** A variable whose name says nothing but whose value is a secret's. */
  alias: string;
  /** A variable that is no secret, for the control that shows a leak is caught. */
  plainName: string;
  plainValue: string;
  restore(): void;
}

export function workerSecrets(): WorkerSecrets {
  const hex = (n: number) => randomBytes(n).toString('hex');
  // Characters that JSON and URL encodings change, after a long plain part.
  const secret = `rts${hex(12)}/+"&=%q`;
  const values: Record<string, string> = {
    OPENAI_API_KEY: `sk-rt-${hex(16)}`,
    ANTHROPIC_API_KEY: `sk-ant-rt-${hex(16)}`,
    CADRE_RT_SECRET: secret,
  };
  const extra: Record<string, string> = {
    // An allow-listed variable holding a secret: dropped from a tool's environment.
    COLORTERM: `truecolor-${secret}`,
    CADRE_RT_ALIAS: secret,
    CADRE_RT_PLAIN: `plain${hex(12)}`,
  };
  const saved = Object.fromEntries([...Object.keys(values), ...Object.keys(extra)].map((name) => [name, process.env[name]]));
  Object.assign(process.env, values, extra);
  return {
    modelKey: values.OPENAI_API_KEY,
    all: values,
    secretName: 'CADRE_RT_SECRET',
    alias: 'CADRE_RT_ALIAS',
    plainName: 'CADRE_RT_PLAIN',
    plainValue: extra.CADRE_RT_PLAIN,
    restore: () => {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    },
  };
}

/** Names the injected resolver knows (this machine has no DNS for them). */
export function lookupNames(): { control: Record<string, string[]>; egress: Record<string, string[]> } {
  const [own] = ownAddresses();
  return {
    control: {
      'loop.rt.test': ['127.0.0.1'],
      // RFC 6761: *.localhost is this machine; this machine has no resolver that says so.
      'cadre.localhost': ['127.0.0.1'],
      'loop6.rt.test': ['::1'],
      'mapped.rt.test': ['::ffff:127.0.0.1'],
      'rebind.rt.test': ['93.184.216.34', '127.0.0.1'],
      'zero.rt.test': ['0.0.0.0'],
      ...(own && { 'own.rt.test': [own] }),
    },
    egress: {
      'meta.rt.test': ['169.254.169.254'],
      'priv.rt.test': ['10.1.2.3'],
      'cgnat.rt.test': ['100.64.1.1'],
      'ula.rt.test': ['fd00::1'],
      'nat64.rt.test': ['64:ff9b::a9fe:a9fe'],
      'metarebind.rt.test': ['93.184.216.34', '169.254.169.254'],
    },
  };
}

/** The names above, then the system's resolver; this machine's own name resolves (as /etc/hosts has it on Debian) even where the system cannot. */
export function egressLookup(names: Record<string, string[]>): EgressLookup {
  const answer = (addresses: string[]) => addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  return async (host) => {
    const known = names[host.toLowerCase()];
    if (known) return answer(known);
    try {
      return await dns.lookup(host, { all: true });
    } catch (err) {
      if (host.toLowerCase() === os.hostname().toLowerCase()) return answer(['127.0.1.1']);
      throw err;
    }
  };
}

/** A unix socket (abstract when the name starts with \0) that counts who connects. */
async function countingSocket(at: string): Promise<{ connections: () => number; close(): Promise<void> }> {
  let count = 0;
  const server = net.createServer((socket) => {
    count++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(at, resolve));
  return { connections: () => count, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

export interface Targets {
  tag: string;
  grpcPort: number;
  hostname: string;
  ownAddresses: string[];
  outside: Outside;
  home: { file: string; sentinel: string };
  idle: Bystander;
  bystanderEnv: string;
  /** Host directories where planted programs leave marks (never visible in a sandbox). */
  marks: (name: string) => string;
  trap: LocalServer;
  open: LocalServer;
  openBody: string;
  redirector: LocalServer;
  secretServer: LocalServer;
  abstractSocket: { name: string; connections: () => number };
  agentSocket: { path: string; connections: () => number };
  temporalCli?: string;
  /** Host paths cases might create: removed at the end whatever happened. */
  planted: string[];
  /** Undo what an escape changed on the host (kernel settings). */
  restore: (() => void)[];
  /** Cases left out because this host has nothing for them to find, and why. */
  skipped: string[];
  /** Workflows reaching the trap terminates: the suite's, which must survive, and the controls', which must not. */
  startTarget(): Promise<string>;
  running(workflowId: string): Promise<boolean>;
  release(): Promise<void>;
}

export async function makeTargets(client: () => CadreClient, taskQueue: () => string, secrets: WorkerSecrets): Promise<Targets> {
  const tag = random(4);
  const marksRoot = mkdtempSync(path.join(os.tmpdir(), 'cadre-rt-marks-'));
  const bystanderEnv = `bystander-env-${random()}`;
  process.env.CADRE_RT_BYSTANDER = bystanderEnv;
  const idle = bystander();
  delete process.env.CADRE_RT_BYSTANDER;
  const targets: string[] = [];
  // `/terminate/<workflow id>/<case id>` (proxied requests carry an absolute URL): what reaching the control plane allows.
  const trap = await startTrap(async (url) => {
    const id = /^\/terminate\/([^/]+)\//.exec(new URL(url, 'http://trap').pathname)?.[1];
    if (id) await client().client.workflow.getHandle(id).terminate('the red team reached the control plane').catch(() => undefined);
  });
  const openBody = `open-${random()}`;
  const agentDir = mkdtempSync(path.join(os.tmpdir(), 'cadre-rt-agent-'));
  const abstractName = `cadre-rt-${random()}`;
  const abstract = await countingSocket(`\0${abstractName}`);
  const agent = await countingSocket(path.join(agentDir, 'agent.sock'));
  const [open, redirector, secretServer] = await Promise.all([startOpenServer(openBody), startRedirector(), startSecretServer(secrets.all.CADRE_RT_SECRET)]);
  const outside = outsideDir();
  const home = homeSentinel();
  const planted: string[] = [];
  const restore: (() => void)[] = [];
  const skipped: string[] = [];
  return {
    tag,
    grpcPort: Number(new URL(`http://${process.env.CADRE_TEST_ADDRESS}`).port),
    hostname: os.hostname(),
    ownAddresses: ownAddresses(),
    outside,
    home,
    idle,
    bystanderEnv,
    marks: (name) => {
      const dir = path.join(marksRoot, name);
      mkdirSync(dir, { recursive: true });
      return dir;
    },
    trap,
    open,
    openBody,
    redirector,
    secretServer,
    abstractSocket: { name: abstractName, connections: abstract.connections },
    agentSocket: { path: path.join(agentDir, 'agent.sock'), connections: agent.connections },
    temporalCli: await findTemporalCli({ build: false }).catch(() => undefined),
    planted,
    restore,
    skipped,
    startTarget: async () => {
      const plan = compile('name: rt-target\nsteps:\n  - { id: hold, ask: { question: "hold until the red team is done", timeout: 1h } }\n', tempWorkspace());
      const { workflowId } = await client().start(plan, {}, { workflowId: uniqueId('rt-target'), taskQueue: taskQueue() });
      targets.push(workflowId);
      return workflowId;
    },
    running: async (id) => (await client().client.workflow.getHandle(id).describe()).status.name === 'RUNNING',
    release: async () => {
      for (const undo of restore) {
        try {
          undo();
        } catch {
          // best effort: said in the case's verdict already
        }
      }
      await Promise.all(targets.map((id) => client().client.workflow.getHandle(id).terminate('red team done').catch(() => undefined)));
      await Promise.all([trap, open, redirector, secretServer].map((s) => s.close()));
      await Promise.all([abstract.close(), agent.close()]);
      idle.stop();
      outside.remove();
      home.remove();
      for (const p of [...planted, marksRoot, agentDir]) rmSync(p, { recursive: true, force: true });
    },
  };
}
