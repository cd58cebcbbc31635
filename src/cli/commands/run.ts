import { createInterface } from 'node:readline';
import { loadProjectHooks } from '../hooks-wiring.js';
import type { Readable, Writable } from 'node:stream';
import type { Command } from 'commander';
import type { StreamEvent } from '../../conversation/index.js';
import {
  HarnessError,
  loadWorkflow,
  replay,
  type AnyHarness,
  type InteractiveSession,
  type PendingPrompt,
  type SessionEvent,
} from '../../harness/index.js';
import { createSessionManager, type SessionManager } from '../../sessions/index.js';
import { openChosenStore, storeOption } from '../options.js';

/**
 * `parley run <workflow.ts|js>`: runs a harness in the terminal.
 *
 * The workflow contract: a module whose default export is a harness made by `defineHarness()`.
 * `--input` is parsed as JSON and passed to `create(input)`; without it the input is undefined.
 * A `.js` (or `.mjs`) module is imported as is; a `.ts` module is loaded through tsx.
 *
 * In the terminal: phases, tasks and agent output are shown as they stream. A prompt from
 * `waitForUser` is asked with its choices (answer with the text or its number); any other line is
 * sent to the running agent (`/to <agent> <message>` targets one agent), and `/stop` aborts the
 * session gracefully. Exit code: 0 when the workflow completed, 130 when it was aborted, 1 when
 * it failed (or a replay diverged), 2 for bad arguments.
 *
 * `--detach` starts it instead as a durable run on the project's running server (`start_run`),
 * prints the run's id and exits: the run outlives this command, and `parley runs` / `parley answer`
 * follow it from any terminal.
 */
export function register(program: Command): void {
  program
    .command('run')
    .description('Run a workflow (a module whose default export is a defineHarness() harness) in the terminal')
    .argument('<workflow>', 'a .ts or .js module whose default export is the harness')
    .option('--input <json>', 'the harness input, as JSON')
    .option('--record <path>', 'write a JSONL recording of the session to this file')
    .option('--replay <path>', 'replay a recording: no back end, no user; fails where the run diverges')
    .option('--detach', "start it as a durable run on the project's running server, print its id and exit")
    .action(
      async (
        workflow: string,
        options: { input?: string; record?: string; replay?: string; detach?: boolean },
        command: Command,
      ) => {
        if (options.record !== undefined && options.replay !== undefined) {
          throw new HarnessError(
            'INVALID_INPUT',
            '--record and --replay cannot be used together: a replay is already recorded.',
            { fault: 'user' },
          );
        }
        if (options.detach) {
          if (options.record !== undefined || options.replay !== undefined) {
            throw new HarnessError(
              'INVALID_INPUT',
              '--detach cannot be used with --record or --replay: a detached run is journaled by the server.',
              { fault: 'user' },
            );
          }
          const { startDetachedRun } = await import('./runs.js');
          await startDetachedRun(command, workflow, parseInput(options.input));
          return;
        }
        const harness = await loadWorkflow(workflow);
        const input = parseInput(options.input);
        const controller = new AbortController();
        const onInterrupt = (): void => controller.abort('interrupted (Ctrl-C)');
        process.once('SIGINT', onInterrupt);
        try {
          if (options.replay !== undefined) {
            process.exitCode = await replayWorkflow(harness, options.replay, input, { stdout: process.stdout });
            return;
          }
          const store = await openChosenStore(command);
          const hooks = await loadProjectHooks(process.cwd(), (line) => process.stderr.write(`warning: ${line}\n`));
          const manager = await createSessionManager({ ...storeOption(command, store), ...(hooks ? { hooks } : {}) });
          try {
            process.exitCode = await runWorkflow(harness, input, {
              stdin: process.stdin,
              stdout: process.stdout,
              sessionManager: manager,
              signal: controller.signal,
              ...(options.record !== undefined ? { record: options.record } : {}),
            });
          } finally {
            await manager.close();
            await store?.close();
          }
        } finally {
          process.removeListener('SIGINT', onInterrupt);
        }
      },
    );
}

/** Kept here too: `parley run`'s loader now lives in the harness layer, where the run service uses it. */
export { loadWorkflow };

function parseInput(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new HarnessError(
      'INVALID_INPUT',
      `--input must be JSON: ${(error as Error).message}. Example: --input '{"code":"…"}'.`,
      { fault: 'user' },
    );
  }
}

export interface RunWorkflowOptions {
  stdin: Readable;
  stdout: Writable;
  sessionManager?: SessionManager;
  record?: string;
  signal?: AbortSignal;
}

/** Runs a harness as an interactive session on a terminal (or any pair of streams); resolves with the exit code. */
export async function runWorkflow(harness: AnyHarness, input: unknown, options: RunWorkflowOptions): Promise<number> {
  const out = new TerminalOutput(options.stdout);
  const session = harness
    .create(input, options.sessionManager ? { sessionManager: options.sessionManager } : {})
    .startSession({
      ...(options.record !== undefined ? { record: options.record } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  const asking = new PromptQueue(out);
  let inputEnded = false;
  const lines = createInterface({ input: options.stdin, terminal: false });

  session.on('*', (event) => {
    out.show(event);
    if (event.type === 'user:prompt') {
      if (inputEnded) session.abort(`the input ended, so nobody can answer "${event.prompt}"`);
      else asking.add(event);
    } else if (event.type === 'user:reply' || event.type === 'user:timeout') {
      asking.remove(event.promptId);
    } else if (event.type === 'user:reply-rejected') {
      asking.ask();
    }
  });
  lines.on('line', (line) => handleLine(session, asking, out, line));
  lines.on('close', () => {
    inputEnded = true;
    if (session.pendingPrompts.length > 0) session.abort('the input ended while a prompt was waiting');
  });

  try {
    const result = await session.complete();
    if (result.aborted) {
      out.line(`\nAborted${result.abortReason ? `: ${result.abortReason}` : ''}.`);
      return 130;
    }
    out.line(`\nResult:\n${formatResult(result.result)}`);
    return 0;
  } catch (error) {
    out.line(`\nThe workflow failed: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  } finally {
    lines.close();
  }
}

function handleLine(
  session: InteractiveSession<unknown, unknown>,
  asking: PromptQueue,
  out: TerminalOutput,
  line: string,
): void {
  const text = line.trim();
  if (text === '') return;
  try {
    if (text === '/stop') {
      session.abort('stopped by the user (/stop)');
      return;
    }
    if (text === '/help') {
      out.line(
        'Answer a prompt by typing its choice or number. Other lines go to the running agent; /to <agent> <message> sends to one agent; /stop aborts.',
      );
      return;
    }
    if (text.startsWith('/to ')) {
      const [, agent = '', ...rest] = text.split(/\s+/);
      session.sendTo(agent, rest.join(' '));
      return;
    }
    const prompt = asking.current;
    if (prompt) {
      session.reply(prompt.promptId, text);
      return;
    }
    session.send(text);
  } catch (error) {
    out.line(`  ! ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Prompts are asked one at a time, oldest first; the others wait their turn. */
class PromptQueue {
  private readonly waiting: PendingPrompt[] = [];

  constructor(private readonly out: TerminalOutput) {}

  get current(): PendingPrompt | undefined {
    return this.waiting[0];
  }

  add(prompt: PendingPrompt): void {
    this.waiting.push(prompt);
    if (this.waiting.length === 1) this.ask();
  }

  remove(promptId: string): void {
    const index = this.waiting.findIndex((prompt) => prompt.promptId === promptId);
    if (index < 0) return;
    this.waiting.splice(index, 1);
    if (index === 0 && this.waiting.length > 0) this.ask();
  }

  ask(): void {
    const prompt = this.current;
    if (!prompt) return;
    this.out.line(`\n? ${prompt.prompt}`);
    if (prompt.choices) this.out.line(prompt.choices.map((choice, index) => `  ${index + 1}) ${choice}`).join('\n'));
    const notes = [
      prompt.defaultChoice !== undefined ? `default: ${prompt.defaultChoice}` : undefined,
      prompt.timeout !== undefined ? `answer within ${Math.round(prompt.timeout / 1000)} s` : undefined,
      prompt.promptId,
    ].filter(Boolean);
    this.out.line(`  (${notes.join(', ')})`);
    this.out.write('> ');
  }
}

/** Renders session events as terminal text; streamed agent text is written as it arrives. */
class TerminalOutput {
  private openText: string | undefined;

  constructor(private readonly stream: Writable) {}

  write(text: string): void {
    this.stream.write(text);
  }

  line(text: string): void {
    this.endText();
    this.stream.write(`${text}\n`);
  }

  private endText(): void {
    if (this.openText === undefined) return;
    this.openText = undefined;
    this.stream.write('\n');
  }

  show(event: SessionEvent): void {
    switch (event.type) {
      case 'phase:start':
        return this.line(`▶ ${event.name}`);
      case 'phase:complete':
        return this.line(`✓ ${event.name} (${seconds(event.duration)})`);
      case 'phase:failed':
        return this.line(`✗ ${event.name}: ${event.error.message}`);
      case 'task:start':
        return this.line(`  • ${event.id}`);
      case 'task:complete':
        return this.line(`  ✓ ${event.id} (${seconds(event.duration)})`);
      case 'task:failed':
        return this.line(`  ✗ ${event.id}: ${event.error.message}`);
      case 'retry:failure':
        return this.line(
          `  ↻ ${event.name}: attempt ${event.attempt}/${event.attempts} failed: ${event.error.message}${event.willRetry ? ` (retrying in ${event.delayMs} ms)` : ''}`,
        );
      case 'parallel:start':
        return this.line(`  ⇉ ${event.name}: ${event.count} at once up to ${event.concurrency}`);
      case 'custom':
        return this.line(`  [${event.name}] ${oneLine(JSON.stringify(event.data), 160)}`);
      case 'agent:start':
        return this.line(`  ${event.agent} ← ${oneLine(event.prompt, 100)}`);
      case 'agent:event':
        return this.agentEvent(event.agent, event.event);
      case 'agent:complete':
        if (event.stopReason !== 'complete')
          this.line(`  ${event.agent}: turn ${event.stopReason === 'aborted' ? 'aborted' : 'failed'}`);
        return;
      case 'message:injected':
        return this.line(
          `  → ${event.agent ?? 'the next agent turn'}${event.delivery === 'live' ? ' (delivered to the running turn)' : event.delivery === 'inbox' ? ' (waits for its next turn)' : ' (queued)'}`,
        );
      case 'user:reply-rejected':
        return this.line(`  ! ${event.message}`);
      case 'user:timeout':
        return this.line(
          event.defaultChoice !== undefined
            ? `  (no answer in time: using "${event.defaultChoice}")`
            : '  (no answer in time)',
        );
      case 'session:abort':
        return this.line(`■ aborting${event.reason ? `: ${event.reason}` : ''}`);
      case 'session:paused':
        return this.line('‖ paused');
      case 'session:resumed':
        return this.line('▶ resumed');
      default:
        return;
    }
  }

  private agentEvent(agent: string, event: StreamEvent): void {
    if (event.conversationId !== 'main') return;
    switch (event.type) {
      case 'block_start':
        if (event.block.type === 'assistant_text') {
          this.endText();
          this.openText = event.block.id;
          this.stream.write(`  ${agent}: ${event.block.content}`);
        } else if (event.block.type === 'tool_use') {
          this.line(`  ${agent} ⚙ ${event.block.name} ${oneLine(JSON.stringify(event.block.input ?? null), 100)}`);
        }
        return;
      case 'text_delta':
        if (event.blockId === this.openText) this.stream.write(event.delta);
        return;
      case 'block_complete':
        if (event.block.id === this.openText) this.endText();
        else if (event.block.type === 'tool_result')
          this.line(`    ↳ ${event.block.isError ? 'error: ' : ''}${oneLine(event.block.content, 120)}`);
        else if (event.block.type === 'system')
          this.line(`  -- ${event.block.subtype}: ${oneLine(event.block.content, 160)}`);
        return;
      default:
        return;
    }
  }
}

/** Replays a recording with the run shown as it goes; resolves with the exit code. */
export async function replayWorkflow(
  harness: AnyHarness,
  recording: string,
  input: unknown,
  options: { stdout: Writable },
): Promise<number> {
  const out = new TerminalOutput(options.stdout);
  try {
    const result = await replay(recording, harness, input, { on: (event) => out.show(event) });
    out.line(
      `\nReplay matched the recording.${result.aborted ? ' (The recorded session was aborted.)' : ''}\nResult:\n${formatResult(result.result)}`,
    );
    return 0;
  } catch (error) {
    out.line(`\n${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

function formatResult(result: unknown): string {
  if (result === undefined) return '(none)';
  return typeof result === 'string' ? result : JSON.stringify(result, null, 2);
}

function seconds(milliseconds: number): string {
  return `${(milliseconds / 1000).toFixed(1)} s`;
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
