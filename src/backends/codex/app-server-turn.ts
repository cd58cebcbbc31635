import type { ThreadEvent, ThreadItem } from '@openai/codex-sdk';
import type { NativeApprovalAsk, NativeApprovalDecision } from '../agent-backend.js';
import type { AppServerProcess } from './app-server-connection.js';
import {
  APP_SERVER_METHODS as METHODS,
  AppServerItemSchema,
  CommandApprovalParamsSchema,
  ErrorNotificationSchema,
  FileChangeApprovalParamsSchema,
  ItemNotificationSchema,
  PlanUpdatedSchema,
  ThreadResponseSchema,
  TokenUsageUpdatedSchema,
  TurnCompletedSchema,
  TurnResponseSchema,
  WarningNotificationSchema,
  type AppServerApprovalDecision,
  type AppServerItem,
  type AppServerThreadSettings,
} from './app-server-protocol.js';

/**
 * One Codex turn through `codex app-server` (JSON-RPC over stdio), the path that can ask a person:
 * thread/start (or thread/resume), turn/start, then the server's notifications until
 * turn/completed. They come out as the SDK's `ThreadEvent`s (the shapes `codex exec --json`
 * prints), so one `CodexEventMapper` makes the same blocks on both paths. Codex's approval
 * requests (a command, a patch) go to `approve`, and the answer goes back as accept or decline:
 * a declined command never runs, and the model is told so. An abort interrupts the turn
 * (turn/interrupt), so the rollout is whole and the thread resumable, then ends the process.
 */
export interface AppServerTurnOptions {
  executablePath: string;
  /** Arguments after `app-server` (process-wide `-c` overrides). */
  args: readonly string[];
  env: Record<string, string>;
  /** Resume this thread; a new one is started without it. */
  threadId?: string;
  settings: AppServerThreadSettings;
  input: string;
  outputSchema?: Record<string, unknown>;
  signal?: AbortSignal;
  /** Asks a person; `acceptEdits` answers patches itself (see `answersItself`). */
  approve: (ask: NativeApprovalAsk, signal: AbortSignal) => Promise<NativeApprovalDecision>;
  /** Whether a request of this kind is accepted without asking (patches under acceptEdits). */
  answersItself?: (kind: NativeApprovalAsk['kind']) => boolean;
  clientVersion: string;
}

/** How long an interrupted turn may take to say it stopped before the process is ended anyway. */
const INTERRUPT_GRACE_MS = 5000;

export async function* runAppServerTurn(options: AppServerTurnOptions): AsyncGenerator<ThreadEvent> {
  // Loaded here, not with the back ends: vscode-jsonrpc is for a Codex turn only.
  const { startAppServer } = await import('./app-server-connection.js');
  const server = startAppServer({ executablePath: options.executablePath, args: options.args, env: options.env });
  const queue = new EventQueue<ThreadEvent>();
  const turnAbort = new AbortController();
  try {
    yield* drive(server, options, queue, turnAbort);
  } finally {
    turnAbort.abort();
    await server.close();
  }
}

async function* drive(
  server: AppServerProcess,
  options: AppServerTurnOptions,
  queue: EventQueue<ThreadEvent>,
  turnAbort: AbortController,
): AsyncGenerator<ThreadEvent> {
  const { connection } = server;
  // Items by id, as item/started announced them: a patch's approval names only the item.
  const items = new Map<string, AppServerItem>();
  let turnId: string | undefined;
  let usage: Extract<ThreadEvent, { type: 'turn.completed' }>['usage'] | undefined;

  void server.exited.then((how) =>
    queue.fail(new Error(`codex app-server exited (${how}) before the turn ended.\n${server.stderrTail()}`)),
  );
  connection.onClose(() =>
    queue.fail(new Error(`The connection to codex app-server closed before the turn ended.\n${server.stderrTail()}`)),
  );

  connection.onNotification((method: string, params: unknown) => {
    switch (method) {
      case 'item/started':
      case 'item/completed': {
        const parsed = ItemNotificationSchema.safeParse(params);
        if (!parsed.success) return;
        const item = AppServerItemSchema.safeParse(parsed.data.item);
        if (!item.success) return;
        items.set(item.data.id, item.data);
        const converted = sdkItemOf(item.data);
        if (converted)
          queue.push({ type: method === 'item/started' ? 'item.started' : 'item.completed', item: converted });
        return;
      }
      case 'turn/plan/updated': {
        const parsed = PlanUpdatedSchema.safeParse(params);
        if (!parsed.success) return;
        queue.push({
          type: 'item.updated',
          item: {
            id: `plan-${parsed.data.turnId}`,
            type: 'todo_list',
            items: parsed.data.plan.map((step) => ({ text: step.step, completed: step.status === 'completed' })),
          },
        });
        return;
      }
      case 'thread/tokenUsage/updated': {
        const parsed = TokenUsageUpdatedSchema.safeParse(params);
        if (!parsed.success) return;
        const total = parsed.data.tokenUsage.total;
        usage = {
          input_tokens: total.inputTokens,
          cached_input_tokens: total.cachedInputTokens,
          cache_write_input_tokens: total.cacheWriteInputTokens ?? 0,
          output_tokens: total.outputTokens,
          reasoning_output_tokens: total.reasoningOutputTokens ?? 0,
        };
        return;
      }
      case 'warning': {
        const parsed = WarningNotificationSchema.safeParse(params);
        if (parsed.success)
          queue.push({ type: 'item.completed', item: { id: 'warning', type: 'error', message: parsed.data.message } });
        return;
      }
      case 'error': {
        // A retried error is Codex's own business; one that ends the turn is reported with it.
        const parsed = ErrorNotificationSchema.safeParse(params);
        if (parsed.success && !parsed.data.willRetry) queue.push({ type: 'error', message: parsed.data.error.message });
        return;
      }
      case 'turn/completed': {
        const parsed = TurnCompletedSchema.safeParse(params);
        if (!parsed.success || (turnId !== undefined && parsed.data.turn.id !== turnId)) return;
        const { status, error } = parsed.data.turn;
        if (status === 'failed') queue.push({ type: 'turn.failed', error: { message: error?.message ?? 'failed' } });
        else if (usage) queue.push({ type: 'turn.completed', usage });
        queue.end();
        return;
      }
      default:
        return;
    }
  });

  const answer = async (ask: NativeApprovalAsk): Promise<{ decision: AppServerApprovalDecision }> => {
    if (options.answersItself?.(ask.kind)) return { decision: 'accept' };
    try {
      const decision = await options.approve(ask, turnAbort.signal);
      return { decision: decision === 'deny' ? 'decline' : 'accept' };
    } catch {
      return { decision: 'decline' };
    }
  };
  connection.onRequest(METHODS.commandApproval, (params: unknown) => {
    const parsed = CommandApprovalParamsSchema.safeParse(params);
    if (!parsed.success) return Promise.resolve({ decision: 'decline' as const });
    const item = items.get(parsed.data.itemId);
    const command = displayCommand(
      parsed.data.command ?? (item?.type === 'commandExecution' ? item.command : ''),
      parsed.data.commandActions ?? (item?.type === 'commandExecution' ? item.commandActions : undefined),
    );
    const cwd = parsed.data.cwd ?? (item?.type === 'commandExecution' ? item.cwd : undefined) ?? undefined;
    return answer({
      kind: 'command',
      tool: 'shell',
      toolUseId: parsed.data.itemId,
      title: `Run \`${command}\``,
      command,
      ...(cwd ? { cwd } : {}),
    });
  });
  connection.onRequest(METHODS.fileChangeApproval, (params: unknown) => {
    const parsed = FileChangeApprovalParamsSchema.safeParse(params);
    if (!parsed.success) return Promise.resolve({ decision: 'decline' as const });
    const item = items.get(parsed.data.itemId);
    const changes = item?.type === 'fileChange' ? item.changes : [];
    const adds = changes.length > 0 && changes.every((change) => change.kind.type === 'add');
    const paths = changes.map((change) => change.path);
    const diff = changes.map((change) => change.diff ?? '').join('');
    return answer({
      kind: adds ? 'write' : 'edit',
      tool: adds ? 'write_file' : 'edit_file',
      toolUseId: `${parsed.data.itemId}:0`,
      title: `${adds ? 'Write' : 'Edit'} ${paths.join(', ') || 'files'}`,
      ...(paths.length > 0 ? { path: paths.join(', ') } : {}),
      ...(diff ? { diff } : {}),
    });
  });

  await connection.sendRequest(METHODS.initialize, {
    clientInfo: { name: 'parley', title: 'Parley', version: options.clientVersion },
    capabilities: null,
  });
  await connection.sendNotification(METHODS.initialized);
  const thread = ThreadResponseSchema.parse(
    options.threadId
      ? await connection
          .sendRequest(METHODS.threadResume, { threadId: options.threadId, ...options.settings, excludeTurns: true })
          .catch((error: unknown) => {
            throw new Error(`thread/resume failed: ${error instanceof Error ? error.message : String(error)}`);
          })
      : await connection.sendRequest(METHODS.threadStart, options.settings),
  ).thread;
  yield { type: 'thread.started', thread_id: thread.id };
  if (options.signal?.aborted) return;
  const turn = TurnResponseSchema.parse(
    await connection.sendRequest(METHODS.turnStart, {
      threadId: thread.id,
      input: [{ type: 'text', text: options.input, text_elements: [] }],
      ...(options.outputSchema ? { outputSchema: options.outputSchema } : {}),
    }),
  ).turn;
  turnId = turn.id;
  yield { type: 'turn.started' };

  const onAbort = (): void => {
    turnAbort.abort();
    void connection.sendRequest(METHODS.turnInterrupt, { threadId: thread.id, turnId: turn.id }).catch(() => undefined);
    // Codex says turn/completed (interrupted) once it stopped; a server that does not is ended anyway.
    setTimeout(() => queue.end(), INTERRUPT_GRACE_MS).unref();
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    if (options.signal?.aborted) onAbort();
    yield* queue.drain();
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
  }
}

/** The SDK's item for an app server item (undefined for what Parley does not show, as a user message). */
function sdkItemOf(item: AppServerItem): ThreadItem | undefined {
  switch (item.type) {
    case 'agentMessage':
      return { id: item.id, type: 'agent_message', text: item.text };
    case 'reasoning': {
      const text = (item.summary.length > 0 ? item.summary : item.content).join('\n');
      return text ? { id: item.id, type: 'reasoning', text } : undefined;
    }
    case 'commandExecution':
      return {
        id: item.id,
        type: 'command_execution',
        command: item.command,
        aggregated_output:
          item.status === 'declined'
            ? `${item.aggregatedOutput ?? ''}The command was declined by the user and did not run.`
            : (item.aggregatedOutput ?? ''),
        ...(item.exitCode !== null && item.exitCode !== undefined ? { exit_code: item.exitCode } : {}),
        status: item.status === 'inProgress' ? 'in_progress' : item.status === 'completed' ? 'completed' : 'failed',
      };
    case 'fileChange':
      if (item.status === 'inProgress') return undefined;
      return {
        id: item.id,
        type: 'file_change',
        // Codex's own diff rides along: the mapper prefers it to rebuilding one from the patch.
        changes: item.changes.map((change) => ({
          path: change.path,
          kind: change.kind.type,
          ...(change.diff ? { diff: change.diff } : {}),
        })),
        status: item.status === 'completed' ? 'completed' : 'failed',
      };
    case 'mcpToolCall':
      return {
        id: item.id,
        type: 'mcp_tool_call',
        server: item.server,
        tool: item.tool,
        arguments: item.arguments,
        ...(item.result
          ? {
              result: {
                content: item.result.content as NonNullable<
                  Extract<ThreadItem, { type: 'mcp_tool_call' }>['result']
                >['content'],
                structured_content: item.result.structuredContent ?? null,
              },
            }
          : {}),
        ...(item.error ? { error: item.error } : {}),
        status: item.status === 'inProgress' ? 'in_progress' : item.status,
      };
    case 'webSearch':
      return { id: item.id, type: 'web_search', query: item.query };
  }
}

/** The command a person reads: what Codex parsed out of its `bash -lc '…'` wrapper, when it is one command. */
function displayCommand(
  command: string,
  actions: ReadonlyArray<{ command?: string | undefined }> | null | undefined,
): string {
  const parsed = actions?.length === 1 ? actions[0]?.command : undefined;
  return parsed ?? command;
}

/** A push queue drained as an async iterable: notifications arrive in callbacks, the turn reads them in order. */
class EventQueue<T> {
  private readonly items: T[] = [];
  private done = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;

  push(item: T): void {
    if (this.done) return;
    this.items.push(item);
    this.notify();
  }

  end(): void {
    this.done = true;
    this.notify();
  }

  fail(error: Error): void {
    if (this.done) return;
    this.failure = error;
    this.done = true;
    this.notify();
  }

  async *drain(): AsyncGenerator<T> {
    for (;;) {
      const item = this.items.shift();
      if (item !== undefined) {
        yield item;
        continue;
      }
      if (this.done) {
        if (this.failure) throw this.failure;
        return;
      }
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
