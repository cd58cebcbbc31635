import { randomUUID } from 'node:crypto';
import { MAIN_CONVERSATION, type UnsequencedEvent } from '../conversation/index.js';
import type { NativeToolHooks, ToolDefinition, ToolOutput } from '../backends/index.js';
import {
  describeFailure,
  type HookEventName,
  type HookInput,
  type HookOutcome,
  type HookRunner,
} from '../hooks/index.js';

/**
 * The hooks of one turn, for every back end alike: `SessionStart` and `UserPromptSubmit` before the
 * back end runs, `PreToolUse` and `PostToolUse` around each of Parley's tools (the one place a call
 * to a Parley tool passes, whichever back end asked for it), `Stop` when the turn ends. A hook that
 * fails becomes a `system` block in the turn's stream, never an error of the turn.
 */
export class TurnHooks {
  /** System blocks waiting to be written into the turn's stream, in order. */
  private readonly notices: UnsequencedEvent[] = [];

  constructor(
    private readonly runner: HookRunner,
    private readonly base: { sessionId: string; cwd: string; transcriptPath?: string },
  ) {}

  /** Runs an event's hooks; its failures join the turn's stream as system blocks. */
  async run(
    event: HookEventName,
    fields: Record<string, unknown>,
    options: { matchValue?: string; signal?: AbortSignal } = {},
  ): Promise<HookOutcome> {
    if (!this.runner.has(event, options.matchValue)) return { context: [], failures: [] };
    const input: HookInput = {
      session_id: this.base.sessionId,
      ...(this.base.transcriptPath ? { transcript_path: this.base.transcriptPath } : {}),
      cwd: this.base.cwd,
      hook_event_name: event,
      ...fields,
    };
    const outcome = await this.runner.run(input, options);
    for (const failure of outcome.failures)
      this.notices.push(hookNotice('error', describeFailure(event, failure), { hook: event, source: failure.source }));
    return outcome;
  }

  /** Each tool wrapped in `PreToolUse` (which may refuse it) and `PostToolUse` (which may add feedback). */
  wrapTools(tools: readonly ToolDefinition[]): ToolDefinition[] {
    return tools.map((tool) => ({
      ...tool,
      execute: async (input, options) => {
        const signal = options.signal;
        // The back end's own id of the call when it gives one, so a hook can match it with the transcript.
        const toolUseId = options.toolUseId ?? randomUUID();
        const before = await this.run(
          'PreToolUse',
          { tool_name: tool.name, tool_input: input, tool_use_id: toolUseId },
          { matchValue: tool.name, ...(signal ? { signal } : {}) },
        );
        if (before.blocked) {
          this.notices.push(
            hookNotice('info', `A PreToolUse hook refused ${tool.name}: ${before.blocked.reason}`, {
              hook: 'PreToolUse',
              source: before.blocked.source,
              tool: tool.name,
            }),
          );
          return {
            content: `A PreToolUse hook refused this ${tool.name} call, so it did not run: ${before.blocked.reason}`,
            isError: true,
            data: { blockedByHook: before.blocked.source },
          };
        }
        const output = await tool.execute(input, options);
        const after = await this.run(
          'PostToolUse',
          {
            tool_name: tool.name,
            tool_input: input,
            tool_use_id: toolUseId,
            tool_response: { content: output.content, isError: output.isError === true, data: output.data },
          },
          { matchValue: tool.name, ...(signal ? { signal } : {}) },
        );
        return withFeedback(output, [
          ...(after.blocked ? [`A PostToolUse hook says: ${after.blocked.reason}`] : []),
          ...after.context,
        ]);
      },
    }));
  }

  /**
   * `PreToolUse` and `PostToolUse` for the back end's own tools (`ExecuteRequest.toolHooks`): the
   * same input as around Parley's tools, a refusal reported as a system block. Undefined when no
   * tool hook is configured, so a back end asks nothing per call.
   */
  nativeToolHooks(): NativeToolHooks | undefined {
    if (!this.runner.has('PreToolUse') && !this.runner.has('PostToolUse')) return undefined;
    return {
      beforeTool: async ({ toolName, toolInput, toolUseId }, signal) => {
        const before = await this.run(
          'PreToolUse',
          { tool_name: toolName, tool_input: toolInput, tool_use_id: toolUseId },
          { matchValue: toolName, ...(signal ? { signal } : {}) },
        );
        if (before.blocked) {
          this.notices.push(
            hookNotice('info', `A PreToolUse hook refused ${toolName}: ${before.blocked.reason}`, {
              hook: 'PreToolUse',
              source: before.blocked.source,
              tool: toolName,
            }),
          );
          return { block: before.blocked.reason };
        }
        return before.context.length > 0 ? { context: before.context.join('\n\n') } : {};
      },
      afterTool: async ({ toolName, toolInput, toolUseId, response }, signal) => {
        const after = await this.run(
          'PostToolUse',
          { tool_name: toolName, tool_input: toolInput, tool_use_id: toolUseId, tool_response: response },
          { matchValue: toolName, ...(signal ? { signal } : {}) },
        );
        const feedback = [
          ...(after.blocked ? [`A PostToolUse hook says: ${after.blocked.reason}`] : []),
          ...after.context,
        ];
        return feedback.length > 0 ? { feedback: feedback.join('\n\n') } : {};
      },
    };
  }

  /**
   * The back end's events with the hooks' notices written in after each one, and `Stop` run when
   * the turn completes: its notices go before the closing `metadata_update`, so they are part of the turn.
   */
  async *stream(
    source: AsyncIterable<UnsequencedEvent>,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<UnsequencedEvent> {
    yield* this.drain();
    for await (const event of source) {
      if (
        event.type === 'metadata_update' &&
        event.conversationId === MAIN_CONVERSATION &&
        event.metadata.turnComplete
      ) {
        yield* this.drain();
        await this.run(
          'Stop',
          { stop_hook_active: false, stop_reason: event.metadata.stopReason ?? 'end_turn' },
          signal ? { signal } : {},
        );
        yield* this.drain();
        yield event;
        continue;
      }
      yield event;
      yield* this.drain();
    }
    yield* this.drain();
  }

  /** The notices waiting, taken out. */
  drain(): UnsequencedEvent[] {
    return this.notices.splice(0);
  }
}

/** The prompt the back end gets, with what `SessionStart` and `UserPromptSubmit` hooks added. */
export function promptWithContext(prompt: string, context: readonly string[]): string {
  if (context.length === 0) return prompt;
  return `${prompt}\n\n<hook-context>\n${context.join('\n\n')}\n</hook-context>`;
}

function withFeedback(output: ToolOutput, feedback: readonly string[]): ToolOutput {
  if (feedback.length === 0) return output;
  return { ...output, content: `${output.content}\n\n${feedback.join('\n\n')}` };
}

/** A system block about a hook. */
export function hookNotice(
  subtype: 'info' | 'error',
  content: string,
  data: Record<string, unknown>,
): UnsequencedEvent {
  const now = Date.now();
  return {
    type: 'block_complete',
    conversationId: MAIN_CONVERSATION,
    block: { id: randomUUID(), type: 'system', subtype, content, data, createdAt: now },
    at: now,
  };
}

/** What `followCompactionHooks` needs of a SessionManager. */
export interface CompactionHookHost {
  on(
    name: 'session:compaction-start',
    handler: (payload: { sessionId: string; trigger: 'auto' | 'manual'; tokensBefore: number }) => void,
  ): () => void;
  on(
    name: 'session:compaction-complete',
    handler: (payload: {
      sessionId: string;
      trigger: 'auto' | 'manual';
      tokensBefore: number;
      tokensAfter: number;
      version: number;
    }) => void,
  ): () => void;
  appendEvents(sessionId: string, events: readonly UnsequencedEvent[]): Promise<unknown>;
}

/**
 * Runs `PreCompact` when a compaction starts and `PostCompact` when it wrote its checkpoint. Neither
 * can stop a compaction (nor can Claude Code's): they run beside it, and a failure becomes a system
 * block in the session. The matcher selects by trigger (`auto` or `manual`), as Claude Code's does.
 */
export function followCompactionHooks(host: CompactionHookHost, runner: HookRunner, cwd: string): () => void {
  const report = (sessionId: string, event: HookEventName, outcome: HookOutcome): void => {
    const notices = outcome.failures.map((failure) =>
      hookNotice('error', describeFailure(event, failure), { hook: event, source: failure.source }),
    );
    if (notices.length > 0) host.appendEvents(sessionId, notices).catch(() => undefined);
  };
  const fire = (sessionId: string, event: HookEventName, fields: Record<string, unknown>, trigger: string): void => {
    if (!runner.has(event, trigger)) return;
    const input: HookInput = { session_id: sessionId, cwd, hook_event_name: event, trigger, ...fields };
    runner.run(input, { matchValue: trigger }).then(
      (outcome) => report(sessionId, event, outcome),
      () => undefined,
    );
  };
  const stopStart = host.on('session:compaction-start', ({ sessionId, trigger, tokensBefore }) =>
    fire(sessionId, 'PreCompact', { custom_instructions: '', tokens_before: tokensBefore }, trigger),
  );
  const stopComplete = host.on(
    'session:compaction-complete',
    ({ sessionId, trigger, tokensBefore, tokensAfter, version }) =>
      fire(
        sessionId,
        'PostCompact',
        { tokens_before: tokensBefore, tokens_after: tokensAfter, checkpoint_version: version },
        trigger,
      ),
  );
  return () => {
    stopStart();
    stopComplete();
  };
}
