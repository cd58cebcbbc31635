import type { Command } from 'commander';
import { loadProjectHooks } from '../hooks-wiring.js';
import {
  createBackend,
  getBackendRegistration,
  resolveBackendConfig,
  type AgentBackend,
} from '../../backends/index.js';
import { ValidationError, type StreamEvent } from '../../conversation/index.js';
import {
  continueOnBackend,
  createBackendSummarizer,
  createSessionManager,
  runTurnWithFallback,
  type SessionManager,
} from '../../sessions/index.js';
import { openChosenStore, resolveDataDir, storeOption } from '../options.js';
import { renderBlock } from '../render.js';

interface ChatOptions {
  backend?: string;
  model?: string;
  session?: string;
}

/**
 * `parley chat [--backend NAME] [--model M] [--session ID] [message]`: one turn from the command line,
 * streamed. Every back end can be tried by hand with it; without `--session` it prints the new
 * session's id. With `--session` it continues that session (Parley's own, imported, or started on
 * another back end) on `--backend`, or on the session's own back end when none is named: a move to
 * a native back end writes the history as its transcript and resumes it (sessions/backend-move.ts),
 * and a failed native resume climbs the fallback ladder.
 */
export function register(program: Command): void {
  program
    .command('chat')
    .description('Run one turn from the command line, streaming the reply')
    .argument('[message]', 'the message (default: read from standard input)')
    .option('--backend <name>', 'back end to use (see `parley backends`)')
    .option('--model <model>', 'model to use')
    .option('--session <id>', 'continue this session (see `parley sessions`)')
    .action(async (message: string | undefined, options: ChatOptions, command: Command) => {
      const text = message ?? (process.stdin.isTTY ? undefined : await readStdin());
      if (!text || text.trim() === '') {
        throw new ValidationError('parley chat needs a message: `parley chat "hello"`, or pipe one on standard input.');
      }
      const dataDir = resolveDataDir(command);
      const store = await openChosenStore(command);
      const requestedBackend =
        options.backend ?? (options.session ? await sessionBackend(command, store, options.session) : undefined);
      const config = await resolveBackendConfig({
        projectDir: process.cwd(),
        dataDir,
        override: {
          ...(requestedBackend ? { backend: requestedBackend } : {}),
          ...(options.model ? { model: options.model } : {}),
          source: 'the command line',
        },
      }).catch(async (error: unknown) => {
        await store?.close();
        throw error;
      });
      if (config.notice) process.stderr.write(`${config.notice}\n`);
      for (const warning of config.warnings) process.stderr.write(`warning: ${warning}\n`);
      const backend = createBackend(config.backend, config, { model: config.model });
      const hooks = await loadProjectHooks(process.cwd(), (line) => process.stderr.write(`warning: ${line}\n`));
      const manager = await createSessionManager({
        ...storeOption(command, store),
        projectRoot: process.cwd(),
        summarize: createBackendSummarizer(backend),
        ...(hooks ? { hooks } : {}),
      });
      const controller = new AbortController();
      const onInterrupt = () => controller.abort();
      process.once('SIGINT', onInterrupt);
      try {
        const sessionId = await chooseSession(manager, backend, options.session, text);
        const turn = await runTurnWithFallback(manager, sessionId, {
          backend,
          prompt: text,
          signal: controller.signal,
          ...(config.model ? { model: config.model } : {}),
          cwd: process.cwd(),
        });
        const failed = await printTurn(turn.events);
        if (!options.session)
          process.stderr.write(`session: ${sessionId}  (continue with: parley chat --session ${sessionId} "…")\n`);
        if (failed) process.exitCode = 1;
      } finally {
        process.off('SIGINT', onInterrupt);
        await manager.close();
        await store?.close();
      }
    });
}

async function chooseSession(
  manager: SessionManager,
  backend: AgentBackend,
  requested: string | undefined,
  text: string,
): Promise<string> {
  const description = backend.describe();
  if (requested) {
    const move = await continueOnBackend(manager, requested, backend, { cwd: process.cwd() });
    if (move.mode !== 'unchanged') {
      const how =
        move.mode === 'native'
          ? `natively, as ${description.name} session ${move.nativeSessionId}`
          : 'managed: Parley builds each request';
      // A fork starts its native session on the back end it was made for: it did not move.
      process.stderr.write(
        move.from === description.name
          ? `session ${requested} continues on ${description.name} (${how})\n`
          : `session ${requested} moved from ${move.from} to ${description.name} (${how})\n`,
      );
    }
    return requested;
  }
  const created = await manager.createSession({
    scope: { kind: 'draft', role: 'chat' },
    agentType: 'chat',
    backend: description.name,
    title: text.replace(/\s+/g, ' ').trim().slice(0, 80),
  });
  return created.sessionId;
}

/**
 * The back end a session ran on last, when it is one Parley has (an imported session's tool is
 * not): `--session` without `--backend` continues there. Undefined leaves the choice to the configuration.
 */
async function sessionBackend(
  command: Command,
  store: Awaited<ReturnType<typeof openChosenStore>>,
  sessionId: string,
): Promise<string | undefined> {
  const manager = await createSessionManager({
    ...storeOption(command, store),
    projectRoot: process.cwd(),
    preloadTokenizer: false,
  });
  try {
    const session = await manager.getSession(sessionId);
    return session.type && !session.readOnly && getBackendRegistration(session.type) ? session.type : undefined;
  } finally {
    await manager.close();
  }
}

/**
 * Streams assistant text as it is typed and other blocks as lines; returns whether the turn failed.
 * A turn the fallback ladder ran again counts by its last attempt: an error the ladder recovered
 * from is shown, and does not fail the command.
 */
async function printTurn(events: AsyncIterable<StreamEvent>): Promise<boolean> {
  let failed = false;
  let attemptFailed = false;
  let midLine = false;
  const streamed = new Set<string>();
  const newline = () => {
    if (midLine) process.stdout.write('\n');
    midLine = false;
  };
  for await (const event of events) {
    if (event.conversationId !== 'main') continue;
    if (event.type === 'metadata_update' && event.metadata.turnComplete) {
      failed = attemptFailed;
      attemptFailed = false;
    }
    if (event.type === 'text_delta') {
      streamed.add(event.blockId);
      process.stdout.write(event.delta);
      midLine = !event.delta.endsWith('\n');
    } else if (event.type === 'block_complete') {
      const block = event.block;
      if (block.type === 'user_message') continue;
      if (block.type === 'assistant_text') {
        // Back ends that do not stream send the whole text at once.
        if (!streamed.has(block.id)) process.stdout.write(block.content);
        midLine = true;
        newline();
        continue;
      }
      newline();
      if (block.type === 'system' && block.subtype === 'error') attemptFailed = true;
      process.stdout.write(`${renderBlock(block)}\n`);
    }
  }
  newline();
  return failed || attemptFailed;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
