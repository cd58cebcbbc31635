import type { Context } from '@opentelemetry/api';
import { randomUUID } from 'node:crypto';
import {
  MAIN_CONVERSATION,
  type ConversationBlock,
  type UnsequencedEvent,
  type SubagentBlock,
  type Usage,
} from '../conversation/index.js';
import type { AgentBackend, ExecuteRequest, ToolDefinition } from '../backends/index.js';
import { inAgentTrace, startAgentTrace, traceAgentEvents } from '../telemetry/index.js';
import { hookNotice, TurnHooks, type SessionManager } from '../sessions/index.js';
import { describeFailure } from '../hooks/index.js';
import { DraftError } from './errors.js';
import type { AgentPool, WorkerSlots } from './pool.js';
import { outputInstructions, repairPrompt, type OutputValidator } from './structured-output.js';
import type { AgentInfo, AgentStatus, DispatchResult, RoleInfo } from './types.js';

/**
 * Worker agents on the autonomous path (seed 000's "task dispatch"): a fresh back-end session per
 * dispatch, structured output per the dispatcher's schema with one repair attempt, a result the
 * dispatcher awaits. A worker's blocks are written live into the log of the session that
 * dispatched it: as a subagent thread (`conversationId` = agent id, with a `subagent` block in the
 * main thread carrying its status and cost) for a drafted agent's workers, or as the main thread
 * of the dispatch's own session for `submit_prompt` without a draft. Its `metadata_update`s land
 * on its thread, so the reducer rolls its cost into the dispatching session's metrics.
 */

export interface WorkerTarget {
  sessionId: string;
  /** `main` for a dispatch's own session, the agent id for a subagent thread. */
  conversationId: string;
}

export interface DispatchRequest {
  agentId: string;
  role: RoleInfo;
  prompt: string;
  validator?: OutputValidator;
  backend: AgentBackend;
  tools: ToolDefinition[];
  target: WorkerTarget;
  project: string;
  cwd?: string;
  taskSlug?: string;
  channelId?: string;
  parentSessionId?: string;
  /** The OpenTelemetry context of the `draft_agent` call: the worker's `invoke_agent` span goes under it. */
  traceParent?: Context;
  /** Where its native back end's own tool calls are approved (a worker's in its drafting session, under its thread). */
  askApproval?: ExecuteRequest['askApproval'];
}

interface WorkerRecord {
  request: DispatchRequest;
  info: AgentInfo;
  controller: AbortController;
  killed: boolean;
  done: Promise<DispatchResult>;
  result?: DispatchResult;
  /** Usage and cost so far, for a timed-out await. */
  usage: Usage;
  costUsd: number;
  costUnknown: boolean;
  subagentBlock?: SubagentBlock;
  runningSince?: number;
}

export interface WorkersOptions {
  manager: SessionManager;
  pool: AgentPool;
  slots: WorkerSlots;
  clock: () => number;
  onStatus: (agent: AgentInfo) => void;
}

/** Texts longer than this are cut in summaries (the full text stays in the thread). */
const SUMMARY_LIMIT = 4000;

export class Workers {
  private readonly records = new Map<string, WorkerRecord>();

  constructor(private readonly options: WorkersOptions) {}

  private iso(at = this.options.clock()): string {
    return new Date(at).toISOString();
  }

  /**
   * Registers the worker (queued), writes its `subagent` block into the dispatching session and
   * starts it as soon as a slot is free. Resolves with the agent id once the block is durable.
   */
  async dispatch(request: DispatchRequest): Promise<string> {
    const now = this.options.clock();
    const info: AgentInfo = {
      agentId: request.agentId,
      kind: 'worker',
      role: request.role.name,
      project: request.project,
      status: 'queued',
      sessionId: request.target.sessionId,
      prompt: firstLine(request.prompt),
      startedAt: this.iso(now),
      costUsd: 0,
      ...(request.taskSlug ? { taskSlug: request.taskSlug } : {}),
      ...(request.channelId ? { channelId: request.channelId } : {}),
      ...(request.parentSessionId ? { parentSessionId: request.parentSessionId } : {}),
    };
    let settle!: (result: DispatchResult) => void;
    const record: WorkerRecord = {
      request,
      info,
      controller: new AbortController(),
      killed: false,
      done: new Promise((resolve) => (settle = resolve)),
      usage: zeroUsage(),
      costUsd: 0,
      costUnknown: false,
    };
    this.records.set(request.agentId, record);
    this.options.pool.register(info);
    if (request.target.conversationId !== MAIN_CONVERSATION) {
      const block: SubagentBlock = {
        type: 'subagent',
        id: `subagent-${request.agentId}`,
        createdAt: now,
        subagentId: request.agentId,
        name: request.role.name,
        input: request.prompt,
        status: 'pending',
      };
      record.subagentBlock = block;
      try {
        await this.append(request.target.sessionId, [
          { type: 'block_start', conversationId: MAIN_CONVERSATION, at: now, block },
        ]);
      } catch (error) {
        this.records.delete(request.agentId);
        this.options.pool.release(request.agentId);
        throw error;
      }
    }
    this.options.onStatus({ ...info });
    void this.run(record).then(settle, (error: unknown) =>
      settle(this.failure(record, 'WORKER_FAILED', describeError(error))),
    );
    return request.agentId;
  }

  get(agentId: string): AgentInfo | undefined {
    const record = this.records.get(agentId);
    return record ? { ...record.info } : undefined;
  }

  /** Workers matching the filter, finished ones included (until `forget`). */
  list(filter: (agent: AgentInfo) => boolean = () => true): AgentInfo[] {
    return [...this.records.values()].map((record) => ({ ...record.info })).filter(filter);
  }

  /**
   * Waits for the worker's result. When `timeoutMs` passes first, answers with the state so far
   * and `timedOut: true`; the worker keeps running. An abort of `signal` (the dispatcher's turn
   * was cancelled) ends the wait the same way.
   */
  async wait(agentId: string, options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<DispatchResult> {
    const record = this.require(agentId);
    if (record.result) return record.result;
    const waiters: Array<Promise<undefined>> = [];
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    if (options.timeoutMs !== undefined)
      waiters.push(new Promise((resolve) => (timer = setTimeout(() => resolve(undefined), options.timeoutMs))));
    if (options.signal) {
      const signal = options.signal;
      waiters.push(
        new Promise((resolve) => {
          onAbort = () => resolve(undefined);
          if (signal.aborted) onAbort();
          else signal.addEventListener('abort', onAbort, { once: true });
        }),
      );
    }
    try {
      const result = await Promise.race([record.done, ...waiters]);
      return result ?? this.snapshot(record);
    } finally {
      if (timer) clearTimeout(timer);
      if (onAbort) options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Stops a queued or running worker; false when it had already ended. */
  kill(agentId: string): boolean {
    const record = this.require(agentId);
    if (record.result || record.killed) return false;
    record.killed = true;
    record.controller.abort();
    return true;
  }

  /** Kills the matching workers and waits until each has ended and its state is written. */
  async killAll(filter: (agent: AgentInfo) => boolean): Promise<void> {
    const matching = [...this.records.values()].filter((record) => filter(record.info));
    for (const record of matching) if (!record.result) this.kill(record.info.agentId);
    await Promise.all(matching.map((record) => record.done));
  }

  /** Drops finished workers from memory (after their draft closed). */
  forget(filter: (agent: AgentInfo) => boolean): void {
    for (const [agentId, record] of this.records)
      if (record.result && filter(record.info)) this.records.delete(agentId);
  }

  hasLive(filter: (agent: AgentInfo) => boolean): boolean {
    return [...this.records.values()].some((record) => !record.result && filter(record.info));
  }

  private require(agentId: string): WorkerRecord {
    const record = this.records.get(agentId);
    if (!record) {
      throw new DraftError('NOT_FOUND', `No worker agent "${agentId}". List the workers with list_agents.`, {
        fault: 'user',
        data: { agentId },
      });
    }
    return record;
  }

  // ---- running ----------------------------------------------------------------------------------

  private async run(record: WorkerRecord): Promise<DispatchResult> {
    const signal = record.controller.signal;
    const release = await this.options.slots.acquire(signal);
    if (!release)
      return this.finish(record, { status: 'killed', summary: 'Killed while queued; it never ran.', attempts: 0 });
    try {
      record.runningSince = this.options.clock();
      this.setStatus(record, 'running');
      if (record.subagentBlock) {
        await this.append(record.request.target.sessionId, [
          {
            type: 'block_update',
            conversationId: MAIN_CONVERSATION,
            at: record.runningSince,
            blockId: record.subagentBlock.id,
            updates: { status: 'running' },
          },
        ]);
      }
      const { request } = record;
      const first = await this.attempt(record, request.prompt);
      let outcome = first;
      let attempts = 1;
      let output: unknown;
      let problem: string | undefined;
      if (!record.killed && !first.error && request.validator) {
        const checked = request.validator.validate(first.text);
        if (checked.ok) output = checked.value;
        else {
          // One repair attempt, self-contained so it works on a fresh session of any back end.
          attempts = 2;
          outcome = await this.attempt(
            record,
            repairPrompt({
              task: request.prompt,
              answer: first.text,
              problem: checked.problem,
              schema: request.validator.schema,
            }),
          );
          if (!record.killed && !outcome.error) {
            const again = request.validator.validate(outcome.text);
            if (again.ok) output = again.value;
            else problem = again.problem;
          }
        }
      }
      if (record.killed)
        return await this.finish(record, {
          status: 'killed',
          summary: summarize(outcome.text) || 'Killed before it answered.',
          attempts,
        });
      if (outcome.error) {
        return await this.finish(record, {
          status: 'failed',
          summary: summarize(outcome.text) || outcome.error.message,
          attempts,
          error: outcome.error,
        });
      }
      if (problem !== undefined) {
        return await this.finish(record, {
          status: 'failed',
          summary: summarize(outcome.text),
          attempts,
          error: {
            code: 'INVALID_OUTPUT',
            message: `The worker's answer did not match the output schema after one repair attempt: ${problem}.`,
          },
        });
      }
      return await this.finish(record, {
        status: 'completed',
        summary: summaryOf(output, outcome.text),
        attempts,
        ...(output !== undefined ? { output } : {}),
      });
    } finally {
      release();
    }
  }

  /** One back-end turn of the worker, every event written to the dispatching session as it arrives. */
  private async attempt(
    record: WorkerRecord,
    prompt: string,
  ): Promise<{ text: string; error?: { code: string; message: string } }> {
    const { request } = record;
    const { target, role, backend } = request;
    const description = backend.describe();
    const instructions = [role.instructions, request.validator ? outputInstructions(request.validator.schema) : '']
      .filter(Boolean)
      .join('\n\n');
    const executeRequest: ExecuteRequest = {
      // A fresh session per dispatch: a UUID, so native back ends can use it as their own id.
      sessionId: randomUUID(),
      prompt,
      isNewSession: true,
      profile: {
        name: role.name,
        description: role.description,
        instructions,
        ...(role.allowedTools ? { allowedTools: role.allowedTools } : {}),
        ...(role.permissionMode ? { permissionMode: role.permissionMode } : {}),
        ...(role.model ? { model: role.model } : {}),
      },
      tools: request.tools,
      signal: record.controller.signal,
      // A fresh session's context, for every back end: managed ones send it as the system prompt,
      // native ones start their new session with it (Claude appends it to Claude Code's prompt).
      systemPrompt: instructions,
      ...(request.validator ? { outputSchema: request.validator.schema } : {}),
      ...(role.model ? { model: role.model } : {}),
      ...(role.maxTurns ? { maxTurns: role.maxTurns } : {}),
      ...(request.cwd ? { cwd: request.cwd } : {}),
      ...(request.askApproval ? { askApproval: request.askApproval } : {}),
    };
    // A worker's turn runs people's hooks as a session's does: around its tools (Parley's and its
    // back end's own) and when it ends, its notices written into the worker's thread.
    const runner = this.options.manager.hooks;
    const hooks = runner ? new TurnHooks(runner, { sessionId: target.sessionId, cwd: this.cwdOf(request) }) : undefined;
    if (hooks) {
      executeRequest.tools = hooks.wrapTools(request.tools);
      const toolHooks = hooks.nativeToolHooks();
      if (toolHooks) executeRequest.toolHooks = toolHooks;
    }
    const now = this.options.clock();
    if (target.conversationId === MAIN_CONVERSATION) {
      await this.options.manager.addMessage(target.sessionId, { role: 'user', content: prompt });
    } else {
      await this.append(target.sessionId, [
        {
          type: 'block_complete',
          conversationId: target.conversationId,
          at: now,
          block: { id: randomUUID(), type: 'user_message', content: prompt, createdAt: now, completedAt: now },
        },
      ]);
    }
    let text = '';
    let structured: string | undefined;
    let error: { code: string; message: string } | undefined;
    try {
      // The worker's `invoke_agent` span: a child of the `execute_tool` span of the call that dispatched it.
      const agentTrace = startAgentTrace({
        agentName: role.name,
        sessionId: target.sessionId,
        backend: description.name,
        agentId: record.info.agentId,
        prompt,
        ...(role.model ? { requestModel: role.model } : {}),
        ...(request.traceParent ? { parent: request.traceParent } : {}),
      });
      if (agentTrace) executeRequest.traceContext = () => agentTrace.currentContext();
      const turn = inAgentTrace(agentTrace, () => backend.execute(executeRequest));
      const traced = agentTrace ? traceAgentEvents(agentTrace, turn.events) : turn.events;
      for await (const draft of hooks ? hooks.stream(traced, record.controller.signal) : traced) {
        const event = readdress(draft, target.conversationId);
        if (draft.conversationId === MAIN_CONVERSATION) {
          if (draft.type === 'block_complete' && draft.block.type === 'assistant_text') text = draft.block.content;
          // Back ends that enforce an output schema through a tool (Claude Code's `StructuredOutput`) carry the answer in its input.
          if (
            draft.type === 'block_complete' &&
            draft.block.type === 'tool_use' &&
            /(^|_)StructuredOutput$/.test(draft.block.name) &&
            draft.block.status === 'success'
          ) {
            structured = JSON.stringify(draft.block.input);
          }
          if (draft.type === 'block_complete' && draft.block.type === 'system' && draft.block.subtype === 'error') {
            error = { code: codeOf(draft.block.data) ?? 'WORKER_FAILED', message: draft.block.content };
          }
          if (draft.type === 'metadata_update') this.addMetadata(record, draft.metadata);
        }
        await this.append(target.sessionId, [event]);
      }
    } catch (thrown) {
      // A back end must end a failed turn with an error block; one that throws still gets one.
      const at = this.options.clock();
      error = { code: 'WORKER_FAILED', message: `The ${description.name} back end failed: ${describeError(thrown)}` };
      await this.append(target.sessionId, [
        {
          type: 'block_complete',
          conversationId: target.conversationId,
          at,
          block: {
            id: randomUUID(),
            type: 'system',
            subtype: 'error',
            content: error.message,
            createdAt: at,
            completedAt: at,
          },
        },
        {
          type: 'metadata_update',
          conversationId: target.conversationId,
          at,
          metadata: { turnComplete: true, stopReason: 'error' },
        },
      ]);
    }
    const answer = structured ?? text;
    return error ? { text: answer, error } : { text: answer };
  }

  private addMetadata(
    record: WorkerRecord,
    metadata: { usage?: Usage; costUsd?: number; costUnknown?: boolean },
  ): void {
    if (metadata.usage) {
      record.usage = {
        inputTokens: record.usage.inputTokens + metadata.usage.inputTokens,
        outputTokens: record.usage.outputTokens + metadata.usage.outputTokens,
        cacheReadTokens: record.usage.cacheReadTokens + metadata.usage.cacheReadTokens,
        cacheWriteTokens: record.usage.cacheWriteTokens + metadata.usage.cacheWriteTokens,
      };
    }
    if (metadata.costUsd !== undefined) record.costUsd += metadata.costUsd;
    if (metadata.costUnknown) record.costUnknown = true;
    this.options.pool.update(record.info.agentId, { costUsd: record.costUsd });
    record.info = { ...record.info, costUsd: record.costUsd };
  }

  private async finish(
    record: WorkerRecord,
    outcome: {
      status: AgentStatus;
      summary: string;
      attempts: number;
      output?: unknown;
      error?: { code: string; message: string };
    },
  ): Promise<DispatchResult> {
    const endedAt = this.options.clock();
    const result: DispatchResult = {
      agentId: record.info.agentId,
      role: record.info.role,
      status: outcome.status,
      timedOut: false,
      summary: outcome.summary,
      usage: record.usage,
      costUsd: record.costUsd,
      costUnknown: record.costUnknown,
      durationMs: record.runningSince === undefined ? 0 : Math.max(0, endedAt - record.runningSince),
      attempts: outcome.attempts,
      sessionId: record.request.target.sessionId,
      conversationId: record.request.target.conversationId,
      ...(outcome.output !== undefined ? { output: outcome.output } : {}),
      ...(outcome.error ? { error: outcome.error } : {}),
    };
    if (record.subagentBlock) {
      const block: ConversationBlock = {
        ...record.subagentBlock,
        status: outcome.status === 'completed' ? 'success' : 'error',
        output: outcome.summary,
        usage: record.usage,
        costUsd: record.costUsd,
        completedAt: endedAt,
      };
      try {
        await this.append(record.request.target.sessionId, [
          { type: 'block_complete', conversationId: MAIN_CONVERSATION, at: endedAt, block },
        ]);
      } catch {
        // The session may be closed (shutdown); the result still reaches the waiter, and recovery closes the block.
      }
    }
    record.result = result;
    record.info = { ...record.info, status: outcome.status, endedAt: this.iso(endedAt), costUsd: record.costUsd };
    this.options.pool.release(record.info.agentId);
    this.options.onStatus({ ...record.info });
    this.workerEnd(record, result);
    return result;
  }

  private failure(record: WorkerRecord, code: string, message: string): DispatchResult {
    const result: DispatchResult = {
      agentId: record.info.agentId,
      role: record.info.role,
      status: 'failed',
      timedOut: false,
      summary: message,
      usage: record.usage,
      costUsd: record.costUsd,
      costUnknown: record.costUnknown,
      durationMs: 0,
      attempts: 0,
      sessionId: record.request.target.sessionId,
      conversationId: record.request.target.conversationId,
      error: { code, message },
    };
    record.result = result;
    record.info = { ...record.info, status: 'failed', endedAt: this.iso() };
    this.options.pool.release(record.info.agentId);
    this.options.onStatus({ ...record.info });
    this.workerEnd(record, result);
    return result;
  }

  private snapshot(record: WorkerRecord): DispatchResult {
    const now = this.options.clock();
    return {
      agentId: record.info.agentId,
      role: record.info.role,
      status: record.info.status,
      timedOut: true,
      summary:
        record.info.status === 'queued'
          ? 'Still queued: the worker cap is reached. Call await_agent again.'
          : 'Still running. Call await_agent again.',
      usage: record.usage,
      costUsd: record.costUsd,
      costUnknown: record.costUnknown,
      durationMs: record.runningSince === undefined ? 0 : Math.max(0, now - record.runningSince),
      attempts: 0,
      sessionId: record.request.target.sessionId,
      conversationId: record.request.target.conversationId,
    };
  }

  private setStatus(record: WorkerRecord, status: AgentStatus): void {
    record.info = { ...record.info, status };
    this.options.pool.update(record.info.agentId, { status });
    this.options.onStatus({ ...record.info });
  }

  private cwdOf(request: DispatchRequest): string {
    return request.cwd ?? this.options.manager.projectRoot ?? process.cwd();
  }

  /**
   * `WorkerEnd` hooks, once per worker, beside its result (they cannot change it); the matcher
   * selects by role. A failing hook becomes a system block in the dispatching session.
   */
  private workerEnd(record: WorkerRecord, result: DispatchResult): void {
    const runner = this.options.manager.hooks;
    const { request } = record;
    if (!runner?.has('WorkerEnd', request.role.name)) return;
    runner
      .run(
        {
          session_id: result.sessionId,
          cwd: this.cwdOf(request),
          hook_event_name: 'WorkerEnd',
          agent_id: result.agentId,
          role: result.role,
          status: result.status,
          summary: result.summary,
          attempts: result.attempts,
          duration_ms: result.durationMs,
          cost_usd: result.costUsd,
          conversation_id: result.conversationId,
          project: request.project,
          ...(request.taskSlug ? { task_slug: request.taskSlug } : {}),
          ...(request.parentSessionId ? { parent_session_id: request.parentSessionId } : {}),
          ...(result.error ? { error: result.error } : {}),
        },
        { matchValue: request.role.name },
      )
      .then(
        async (outcome) => {
          const notices = outcome.failures.map((failure) =>
            hookNotice('error', describeFailure('WorkerEnd', failure), { hook: 'WorkerEnd', source: failure.source }),
          );
          if (notices.length > 0) await this.append(result.sessionId, notices);
        },
        () => undefined,
      )
      .catch(() => undefined);
  }

  private append(sessionId: string, events: UnsequencedEvent[]): Promise<unknown> {
    return this.options.manager.appendEvents(sessionId, events);
  }
}

/**
 * Moves a worker's event onto its thread: its `main` becomes `conversationId`, and its own
 * subagents become `<conversationId>/<id>` so they stay distinct from the dispatcher's.
 */
export function readdress(event: UnsequencedEvent, conversationId: string): UnsequencedEvent {
  if (conversationId === MAIN_CONVERSATION) return event;
  const mapped =
    event.conversationId === MAIN_CONVERSATION ? conversationId : `${conversationId}/${event.conversationId}`;
  if ((event.type === 'block_start' || event.type === 'block_complete') && event.block.type === 'subagent') {
    return {
      ...event,
      conversationId: mapped,
      block: { ...event.block, subagentId: `${conversationId}/${event.block.subagentId}` },
    };
  }
  return { ...event, conversationId: mapped };
}

function zeroUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
}

function codeOf(data: unknown): string | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const code = (data as Record<string, unknown>)['code'];
  return typeof code === 'string' ? code : undefined;
}

function summarize(text: string): string {
  const trimmed = text.trim();
  return trimmed.length > SUMMARY_LIMIT ? `${trimmed.slice(0, SUMMARY_LIMIT)}…` : trimmed;
}

/** The output's own `summary` when it has one, else the final text. */
function summaryOf(output: unknown, text: string): string {
  if (
    typeof output === 'object' &&
    output !== null &&
    typeof (output as Record<string, unknown>)['summary'] === 'string'
  ) {
    return summarize((output as Record<string, string>)['summary']!);
  }
  return summarize(text);
}

function firstLine(text: string): string {
  const line = text.trim().split('\n', 1)[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
