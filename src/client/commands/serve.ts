/** `cadre serve`: sessions in a browser, over the AI SDK's UI message stream (src/client/serve.ts). */
import { type Command, Option } from 'commander';
import { CadreError } from '../../errors/cadre-error';
import { taskQueue } from '../../protocol/task-queue';
import { info, port, untilSignal, withClient } from './shared';
import { type SessionCliOptions, sessionOptions } from './agents';

type ServeOptions = SessionCliOptions & { port: number; host: string; origin: string[] };

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

export function registerServeCommand(program: Command): void {
  const serve = program
    .command('serve')
    .description('serve a chat page and the useChat endpoints (/api/chat) for sessions, until Ctrl-C; each browser chat is a session')
    .addHelpText('after', '\nExamples:\n  cadre serve\n  cadre serve --port 8080 --tools fs.read,shell --ask shell\n  CADRE_MODEL=openai:gpt-4o-mini cadre serve --workspace ./repo')
    .option('--port <port>', 'port to listen on', port, 3000)
    .option('--host <host>', 'address to listen on (anyone who reaches it can talk to the agent and its tools)', '127.0.0.1')
    .addOption(new Option('--origin <url>', 'a browser origin besides this server\'s own that may call /api/chat, such as a useChat app\'s dev server (repeatable)').argParser((v: string, prev: string[]) => [...prev, v]).default([]));
  sessionOptions(serve, 'tools whose calls wait for approval in the page, comma-separated').action(async (opts: ServeOptions) => {
      const [http, { createChatHandler }, { sessionInput }] = await Promise.all([import('node:http'), import('../serve'), import('../sessions')]);
      // A bad tool name is the user's to fix before anything listens.
      const start = sessionInput(opts);
      await withClient(async (client) => {
        const local = LOOPBACK.has(opts.host);
        const server = http.createServer(createChatHandler({ client, start, taskQueue: taskQueue(), origins: opts.origin, ...(local && { hosts: localHosts(opts.port) }) }));
        await new Promise<void>((resolve, reject) => {
          server.once('error', (err: NodeJS.ErrnoException) => reject(err.code === 'EADDRINUSE' ? new CadreError(`port ${opts.port} on ${opts.host} is taken: pass --port`) : err));
          server.listen(opts.port, opts.host, resolve);
        });
        const host = opts.host.includes(':') && !opts.host.startsWith('[') ? `[${opts.host}]` : opts.host;
        info(`cadre serve: http://${host}:${opts.port}/ (useChat: /api/chat; sessions on task queue "${taskQueue()}", tools: ${start.tools.join(', ') || 'none'}); Ctrl-C stops`);
        if (!local) info('warning: no authentication: whoever reaches this address can talk to the agent and approve its tools');
        const signal = await untilSignal();
        info(`${signal}: stopping (sessions go on: cadre chat <id>)`);
        // Open streams would hold close() for good; their replies go on in the sessions.
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      });
    });
}

/** The Host headers a browser sends to a loopback server; others are DNS rebinding. */
function localHosts(port: number): string[] {
  return ['127.0.0.1', 'localhost', '[::1]'].map((h) => `${h}:${port}`);
}
