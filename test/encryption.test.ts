/**
 * Encrypted payloads: with keys configured, clients and workers encrypt every payload with
 * AES-256-GCM (inputs, step outputs, answers, results, failures' messages). History on the server
 * holds none of it in clear text; the Web UI shows it decoded through `cadre codec-server`'s
 * protocol; a wrong key fails with a clear message; old keys still decrypt after a rotation.
 */
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import YAML from 'yaml';
import { AesGcmCodec, ENCRYPTED_ENCODING, KEY_ID_KEY } from '../src/codec/aes-gcm';
import { type CodecKey, parseCodecKeys } from '../src/codec/keys';
import { randomCodecToken, startCodecServer } from '../src/codec/server';
import { CadreClient } from '../src/client/client';
import { validatePlan } from '../src/plan-format/validate';
import { startDevServer } from '../src/worker/dev-server';
import { createCadreWorker } from '../src/worker/worker';
import { launchChromium } from './support/browser';
import { step, tempWorkspace, uniqueId } from './support/harness';
import * as patches from '../src/protocol/patches';

/**
 * The patch ids cadre's workflows declare (`const PATCH_… = '…'`, in their modules or in
 * protocol/patches.ts) and their baselines' markers: the only strings of the run's own left readable.
 */
const PATCH_IDS = new Set([
  ...readdirSync(path.join(__dirname, '../src/workflows'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .flatMap((file) => [...readFileSync(path.join(__dirname, '../src/workflows', file), 'utf8').matchAll(/\bPATCH_\w+ = '([a-z0-9-]+)'/g)].map((m) => m[1])),
  ...Object.entries(patches).flatMap(([name, value]) => {
    if (name.startsWith('PATCH_') && typeof value === 'string') return [value];
    // Every workflow's baselines (PLAN_BASELINES, AGENT_BASELINES, SESSION_BASELINES, any added later): their markers.
    return name.endsWith('_BASELINES') ? (value as readonly patches.PatchBaseline[]).map(([marker]) => marker) : [];
  }),
]);

const OLD = 'old=' + Buffer.alloc(32, 1).toString('base64');
const NEW = 'new=' + Buffer.alloc(32, 2).toString('base64');
const OTHER = 'new=' + Buffer.alloc(32, 3).toString('base64');
const keys = (text: string): CodecKey[] => parseCodecKeys(text, 'test');

describe('the AES-256-GCM codec', () => {
  const payload: Payload = { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('"top secret"') };

  test('encrypts with the newest key, decrypts with any, and leaves plain payloads alone', async () => {
    const [sealed] = await new AesGcmCodec(keys(`${OLD}\n${NEW}`)).encode([payload]);
    expect(Buffer.from(sealed.metadata!.encoding!).toString()).toBe(ENCRYPTED_ENCODING);
    expect(Buffer.from(sealed.metadata![KEY_ID_KEY]!).toString()).toBe('new');
    expect(Buffer.from(sealed.data!).includes('secret')).toBe(false);
    const [opened] = await new AesGcmCodec(keys(`${OLD};${NEW}`)).decode([sealed]);
    expect(Buffer.from(opened.data!).toString()).toBe('"top secret"');
    const [oldSealed] = await new AesGcmCodec(keys(OLD)).encode([payload]);
    expect(Buffer.from((await new AesGcmCodec(keys(`${OLD}\n${NEW}`)).decode([oldSealed]))[0].data!).toString()).toBe('"top secret"');
    expect(await new AesGcmCodec(keys(NEW)).decode([payload])).toEqual([payload]);
  });

  test('a wrong or missing key, and a changed payload, fail with what to do', async () => {
    const [sealed] = await new AesGcmCodec(keys(NEW)).encode([payload]);
    await expect(new AesGcmCodec(keys(OTHER)).decode([sealed])).rejects.toThrow('cannot decrypt a payload with key "new": the key is not the one it was encrypted with, or the payload was changed');
    await expect(new AesGcmCodec(keys(OLD)).decode([sealed])).rejects.toThrow('a payload is encrypted with key "new", which is not among this process\'s keys (old): add it to CADRE_CODEC_KEYS or CADRE_CODEC_KEY_FILE');
    // One byte flipped (set to 0, it would stay the same one time in 256).
    const flipped = Buffer.from(sealed.data!);
    flipped[20] ^= 0xff;
    const changed = { ...sealed, data: flipped };
    await expect(new AesGcmCodec(keys(NEW)).decode([changed])).rejects.toThrow('cannot decrypt a payload with key "new"');
  });

  test('keys are checked when read', () => {
    expect(() => keys('k=' + Buffer.alloc(16).toString('base64'))).toThrow('test, key 1 ("k"): AES-256 needs 32 bytes in base64, got 16');
    expect(() => keys(`${OLD}\n${OLD}`)).toThrow('test, key 2: the key id "old" is given twice');
    expect(() => keys('nokey')).toThrow('test, key 1: expected id=base64key');
    expect(() => keys('# only a comment\n')).toThrow('test: no keys');
  });
});

/** Every payload in a history, as the server keeps it (no codec between). */
function historyPayloads(history: temporal.api.history.v1.IHistory): Payload[] {
  const found: Payload[] = [];
  const walk = (value: unknown) => {
    if (value === null || typeof value !== 'object') return;
    if (value instanceof Uint8Array) return;
    const record = value as Record<string, unknown>;
    if (record.metadata && typeof record.metadata === 'object' && 'data' in record) found.push(record as Payload);
    for (const child of Object.values(record)) walk(child);
  };
  walk(history);
  return found;
}

describe('a run with encryption on', () => {
  const saved = { ...process.env };
  afterAll(() => {
    for (const name of ['CADRE_CODEC_KEYS', 'CADRE_CODEC_KEY_FILE']) delete process.env[name];
    Object.assign(process.env, { CADRE_CODEC_KEYS: saved.CADRE_CODEC_KEYS });
    if (saved.CADRE_CODEC_KEYS === undefined) delete process.env.CADRE_CODEC_KEYS;
  });

  test('history holds no clear text; the Web UI shows it decoded through the codec server; a wrong key says so', async () => {
    process.env.CADRE_CODEC_KEYS = OLD;
    const decodes = { count: 0 };
    const codec = new AesGcmCodec(keys(OLD));
    const counting: PayloadCodec = { encode: (p) => codec.encode(p), decode: (p) => ((decodes.count += p.length), codec.decode(p)) };
    const origins: string[] = [];
    // As `cadre dev` does: the token in the endpoint's path, since the Web UI sends no header of its own.
    const token = randomCodecToken();
    const codecServer = await startCodecServer({ codec: counting, port: 0, origins, token });
    const server = await startDevServer({ dataDir: mkdtempSync(path.join(os.tmpdir(), 'cadre-codec-')), ephemeral: true, codecEndpoint: `${codecServer.url}/${token}` });
    origins.push(server.uiUrl!);
    const taskQueue = uniqueId('encrypted');
    // No prebuilt bundle: the worker bundles the failure converter that encrypts failure messages.
    const { worker, connection } = await createCadreWorker({ address: server.address, namespace: server.namespace, taskQueue, auditDir: tempWorkspace() });
    const ws = tempWorkspace();
    const plan = validatePlan(
      YAML.parse(`
name: encrypted
inputs: { token: { type: string } }
steps:
  - { id: echo, tool: shell, with: { command: "echo \\"$T\\"", env: { T: "{{ inputs.token }}" } } }
  - { id: confirm, dependsOn: [echo], ask: { question: "Go?" } }
  - { id: broken, dependsOn: [confirm], onFailure: skip, retry: { maximumAttempts: 1 }, tool: fs.read, with: { path: "MISSING-SECRET-FILE.txt" } }
output: { echoed: "{{ steps.echo.output.stdout }}", answer: "{{ steps.confirm.output }}" }
`),
      { baseDir: ws },
    );
    if (!plan.ok) throw new Error(JSON.stringify(plan.issues));
    const client = await CadreClient.connect({ address: server.address, namespace: server.namespace });
    const raw = await Connection.connect({ address: server.address });
    const browser = await launchChromium();
    try {
      await worker.runUntil(async () => {
        const { workflowId } = await client.start(plan.plan, { token: 'hunter2-INPUT-SECRET' }, { workflowId: uniqueId('encrypted'), taskQueue });
        for (let d = await client.diagnostics(workflowId); d.waiting.length === 0; d = await client.diagnostics(workflowId)) await new Promise((r) => setTimeout(r, 100));
        await client.answer(workflowId, 'confirm', 'ANSWER-SECRET-42');
        const d = await client.result(workflowId);
        expect(d.status).toBe('completed');
        expect(d.output).toEqual({ echoed: 'hunter2-INPUT-SECRET\n', answer: 'ANSWER-SECRET-42' });
        expect(step(d, 'broken')).toMatchObject({ status: 'skipped', error: expect.stringContaining('MISSING-SECRET-FILE.txt') });

        // What the server keeps: no secret in any byte, every payload encrypted with key "old".
        const { history } = await raw.workflowService.getWorkflowExecutionHistory({ namespace: server.namespace, execution: { workflowId } });
        const bytes = Buffer.from(temporal.api.history.v1.History.encode(history!).finish()).toString('latin1');
        for (const secret of ['hunter2', 'ANSWER-SECRET', 'MISSING-SECRET', 'echoed']) expect(bytes).not.toContain(secret);
        const payloads = historyPayloads(history!);
        expect(payloads.length).toBeGreaterThan(10);
        const plainOnes = payloads.filter((p) => Buffer.from(p.metadata?.encoding ?? []).toString() !== ENCRYPTED_ENCODING);
        // Left readable: search attributes (the plan's name, its status, patch ids) and the SDK's own
        // markers (a patch's id, a local activity's bookkeeping); nothing a user sent.
        const kinds = plainOnes.map((p) => {
          const value = JSON.parse(Buffer.from(p.data ?? []).toString()) as unknown;
          if (['encrypted', 'running', 'waiting', 'completed'].includes(value as string)) return 'search attribute';
          if (Array.isArray(value) && value.every((id) => PATCH_IDS.has(id))) return 'patch ids';
          const keys = Object.keys(value as object).sort().join(',');
          if (keys === 'deprecated,id') return 'patch marker';
          if (keys === 'activity_id,activity_type,attempt,backoff,complete_time,original_schedule_time,seq') return 'local activity marker';
          return `unexpected: ${JSON.stringify(value)}`;
        });
        expect([...new Set(kinds)].sort()).toEqual(['local activity marker', 'patch ids', 'patch marker', 'search attribute']);

        // The Web UI asks the codec server and shows the decoded input and result.
        const page = await browser.newPage();
        await page.goto(`${server.uiUrl}/namespaces/${server.namespace}/workflows/${encodeURIComponent(workflowId)}`);
        await page.getByText('hunter2-INPUT-SECRET').first().waitFor({ timeout: 60_000 });
        await page.getByText('ANSWER-SECRET-42').first().waitFor({ timeout: 30_000 });
        expect(decodes.count).toBeGreaterThan(0);

        // Another key: a clear error, not garbage.
        process.env.CADRE_CODEC_KEYS = OTHER.replace('new=', 'old=');
        const wrong = await CadreClient.connect({ address: server.address, namespace: server.namespace });
        try {
          await expect(wrong.diagnostics(workflowId)).rejects.toThrow('cannot decrypt a payload with key "old"');
        } finally {
          await wrong.close();
        }
        // A rotation: the new key encrypts new runs, the old one still reads the old run.
        process.env.CADRE_CODEC_KEYS = `${OLD}\n${NEW}`;
        const rotated = await CadreClient.connect({ address: server.address, namespace: server.namespace });
        try {
          expect((await rotated.diagnostics(workflowId)).output).toEqual(d.output);
        } finally {
          await rotated.close();
        }
      });
    } finally {
      await browser.close();
      await raw.close();
      await client.close();
      await connection.close();
      await server.stop();
      await codecServer.close();
    }
  });

  // More of the codec server's token and CORS in test/codec-server.test.ts.
  test('the codec server: decode for an allowed origin, CORS for others refused, the bearer token required', async () => {
    const codec = new AesGcmCodec(keys(NEW));
    const server = await startCodecServer({ codec, port: 0, origins: ['http://ui.example'], token: 's3cret-codec-token' });
    try {
      const [sealed] = await codec.encode([{ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('"hello"') }]);
      const body = JSON.stringify({ payloads: [temporal.api.common.v1.Payload.toObject(temporal.api.common.v1.Payload.create(sealed), { bytes: String })] });
      const post = (route: string, headers: Record<string, string>) => fetch(`${server.url}${route}`, { method: 'POST', body, headers: { 'Content-Type': 'application/json', ...headers } });
      expect((await post('/decode', {})).status).toBe(401);
      expect((await post('/decode', { Authorization: 'Bearer wrong!' })).status).toBe(401);
      const ok = await post('/decode', { Authorization: 'Bearer s3cret-codec-token', Origin: 'http://ui.example', 'X-Namespace': 'default' });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('access-control-allow-origin')).toBe('http://ui.example');
      const decoded = (await ok.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
      expect(Buffer.from(decoded.payloads[0].data, 'base64').toString()).toBe('"hello"');
      expect(Buffer.from(decoded.payloads[0].metadata.encoding, 'base64').toString()).toBe('json/plain');
      const preflight = (origin: string) => fetch(`${server.url}/decode`, { method: 'OPTIONS', headers: { Origin: origin, 'Access-Control-Request-Method': 'POST' } });
      expect((await preflight('http://ui.example')).status).toBe(204);
      const refused = await preflight('http://evil.example');
      expect([refused.status, refused.headers.get('access-control-allow-origin')]).toEqual([403, null]);
      expect((await post('/decode', { Authorization: 'Bearer s3cret-codec-token' }).then(() => fetch(`${server.url}/decode`, { method: 'POST', body: '{"nope": 1}', headers: { Authorization: 'Bearer s3cret-codec-token' } }))).status).toBe(400);
    } finally {
      await server.close();
    }
  });
});
