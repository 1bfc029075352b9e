/** `cadre dev`, `cadre codec-server` and `cadre demo`: servers in the foreground, loaded only when asked for. */
import { type Command, Option } from 'commander';
import { codecKeysFromEnv } from '../../codec/keys';
import { CadreError } from '../../errors/cadre-error';
import { readServerInfo, removeServerInfo, writeServerInfo } from '../connection-config';
import { taskQueue } from '../../protocol/task-queue';
import { info, out, port, untilSignal } from './shared';

/** The minimum length of a codec token (codec/server.ts), here so the help text needs no server. */
const MIN_TOKEN_LENGTH = 16;

export function registerDevCommands(program: Command): void {
  program
    .command('dev')
    .description('run a Temporal dev server (state in .cadre/, Web UI on) and a worker, in the foreground')
    .addHelpText('after', '\nExamples:\n  cadre dev\n  cadre dev --port 7233 --ui-port 8233')
    .option('--port <port>', 'gRPC port of the dev server', port, 7233)
    .option('--ui-port <port>', 'Web UI port', port, 8233)
    .option('--data-dir <dir>', 'where the dev server keeps its state', '.cadre')
    .action(async (opts: { port: number; uiPort: number; dataDir: string }) => {
      const running = readServerInfo(process.cwd());
      if (running) throw new CadreError(`cadre dev already runs here (pid ${running.pid}, ${running.address}); two servers on one .cadre/ would corrupt it`);
      const [{ installConciseLogging }, { startEmbedded }, { AesGcmCodec }, { randomCodecToken, startCodecServer }, { workerSandboxWarning }] = await Promise.all([
        import('../../worker/logging'),
        import('../../worker/embedded'),
        import('../../codec/aes-gcm'),
        import('../../codec/server'),
        import('../../activities/sandbox-settings'),
      ]);
      installConciseLogging('WARN');
      // With payload encryption on, the Web UI decodes through a codec server of its own, its
      // token (new at each start) in the endpoint's path: the UI sends no header of its own.
      const keys = codecKeysFromEnv();
      const uiOrigins: string[] = [];
      const codecToken = randomCodecToken();
      const codec = keys ? await startCodecServer({ codec: new AesGcmCodec(keys), port: 0, origins: uiOrigins, token: codecToken, log: info }) : undefined;
      const embedded = await startEmbedded({ dataDir: opts.dataDir, port: opts.port, uiPort: opts.uiPort, supervise: true, log: info, ...(codec && { codecEndpoint: `${codec.url}/${codecToken}` }) });
      if (embedded.server.uiUrl) uiOrigins.push(embedded.server.uiUrl, embedded.server.uiUrl.replace('127.0.0.1', 'localhost'));
      const here = process.cwd();
      if (embedded.server.owned) writeServerInfo(here, embedded.server);
      out(`Temporal gRPC: ${embedded.server.address} (namespace ${embedded.server.namespace})`);
      if (embedded.server.uiUrl) out(`Web UI:        ${embedded.server.uiUrl}`);
      if (codec) out(`codec server:  ${codec.url} (payloads encrypted; the Web UI decodes through it)`);
      out(`worker:        task queue "${taskQueue()}"; Ctrl-C stops both`);
      const sandboxWarning = workerSandboxWarning();
      if (sandboxWarning) info(`warning: ${sandboxWarning}`);
      const signal = await Promise.race([untilSignal(), embedded.running.then(() => 'worker stopped')]);
      info(`${signal}: shutting down...`);
      await embedded.stop();
      await codec?.close();
      if (embedded.server.owned) removeServerInfo(here);
      info('stopped');
    });

  program
    .command('codec-server')
    .description('serve /encode and /decode for the Web UI and `temporal --codec-endpoint` (keys: CADRE_CODEC_KEYS or CADRE_CODEC_KEY_FILE)')
    .addHelpText('after', '\nExamples:\n  CADRE_CODEC_KEY_FILE=keys.txt CADRE_CODEC_TOKEN=$(openssl rand -hex 24) cadre codec-server --port 8081 --origin https://temporal.example.com')
    .option('--port <port>', 'port to listen on', port, 8081)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .addOption(new Option('--origin <url>', 'a browser origin allowed to call it, such as the Web UI\'s (repeatable)').argParser((v: string, prev: string[]) => [...prev, v]).default(['http://localhost:8233', 'http://127.0.0.1:8233'], 'the dev server\'s Web UI'))
    .option('--token-env <name>', `the variable holding the token every request must carry, at least ${MIN_TOKEN_LENGTH} characters: as \`Authorization: Bearer <token>\`, or in the endpoint, http://host:port/<token>`, 'CADRE_CODEC_TOKEN')
    .action(async (opts: { port: number; host: string; origin: string[]; tokenEnv: string }) => {
      const keys = codecKeysFromEnv();
      if (!keys) throw new CadreError('no keys: set CADRE_CODEC_KEYS (id=base64key, newest last) or CADRE_CODEC_KEY_FILE');
      const token = process.env[opts.tokenEnv];
      if (!token) throw new CadreError(`no token for the codec server: set ${opts.tokenEnv}, or --token-env NAME`);
      if (token.length < MIN_TOKEN_LENGTH) throw new CadreError(`${opts.tokenEnv} is too short for a codec token: at least ${MIN_TOKEN_LENGTH} characters (openssl rand -hex 24)`);
      const [{ AesGcmCodec }, { startCodecServer }] = await Promise.all([import('../../codec/aes-gcm'), import('../../codec/server')]);
      const server = await startCodecServer({ codec: new AesGcmCodec(keys), port: opts.port, host: opts.host, origins: opts.origin, token, log: info });
      out(`codec server: ${server.url} (keys ${keys.map((k) => k.id).join(', ')}; encrypting with ${keys[keys.length - 1].id}; requests carry the token in $${opts.tokenEnv})`);
      out(`Web UI: set ${server.url}/<token> as the codec server; CLI: temporal --codec-endpoint ${server.url} --codec-auth "Bearer $${opts.tokenEnv}" ...`);
      await untilSignal();
      await server.close();
    });
}

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('run the example plan end to end on an embedded server, non-interactively')
    .option('--data-dir <dir>', 'where the dev server keeps its state', '.cadre')
    .action(async (opts: { dataDir: string }) => {
      const [{ installConciseLogging }, { runDemo }] = await Promise.all([import('../../worker/logging'), import('../demo')]);
      // Failed attempts show as step progress: keep worker logs to errors.
      installConciseLogging('ERROR');
      const final = await runDemo({ dataDir: opts.dataDir, out, info });
      process.exitCode = final === 'completed' ? 0 : 1;
    });
}
