/**
 * The shared back-end conformance suite. Every back end calls
 * `describeBackendConformance` with an initializer; the suite drives the back end through its
 * real client against a steerable fake (scripted model turns) and checks what every caller of
 * `AgentBackend` relies on. What a back end lacks is declared in `differences` with a reason, and
 * the suite turns that into a test of the reason, never a silent skip.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyEvents,
  emptyConversation,
  StreamEventSchema,
  type ConversationBlock,
  type StreamEvent,
  type UnsequencedEvent,
  type SystemBlock,
  type TurnMetadata,
} from '../../src/conversation/index.js';
import type { AgentBackend, AgentTurn, ExecuteRequest } from '../../src/backends/index.js';

export type FailureKind = 'rate_limit' | 'server_error' | 'crash';

export interface ConformanceContext {
  backend: AgentBackend;
  /** A request with what this back end needs (cwd, model, ...); the suite adds prompt and session fields. */
  request(fields: Pick<ExecuteRequest, 'prompt'> & Partial<ExecuteRequest>): ExecuteRequest;
  script: {
    /** The next model turn answers with this text, streamed in several chunks. */
    text(text: string): void;
    /** The next model turn streams `text`, then stalls until the request is aborted. */
    stall(text: string): void;
    /** The next model request fails this way; returns the failure code the error block must carry. */
    failure(kind: FailureKind): { code: string };
    /**
     * The next model turn calls a tool, then answers `finalText` once it has the result. Returns
     * the request fields that provide the tool (Parley tools for the APIs, none for CLIs with
     * built-in tools) and the tool's name.
     */
    toolCall(finalText: string): { request: Partial<ExecuteRequest>; toolName: string };
  };
  /** Everything the model received in its last request, serialized (to check resumed history). */
  lastModelRequest?(): string;
  teardown(): Promise<void>;
}

export interface ConformanceInitializer {
  name: string;
  create(): Promise<ConformanceContext>;
  /** Failure kinds the fake can produce for this back end (at least one). */
  failureKinds: FailureKind[];
  /** What this back end does not do, each with the reason. */
  differences?: {
    /** Managed back ends do not resume natively: Parley rebuilds every request. */
    resume?: string;
  };
}

/** Runs a turn to its end; also returns what the iteration threw, which the contract forbids. */
export async function collect(
  turn: AgentTurn,
  onEvent?: (event: UnsequencedEvent) => void,
): Promise<UnsequencedEvent[]> {
  const events: UnsequencedEvent[] = [];
  for await (const event of turn.events) {
    events.push(event);
    onEvent?.(event);
  }
  return events;
}

/** Stamps unsequenced events as the session layer would, validates them against the wire schema, and reduces them. */
export function reduce(events: UnsequencedEvent[], sessionId = 'conformance') {
  const stamped: StreamEvent[] = events.map((event, index) =>
    StreamEventSchema.parse({ ...event, sessionId, seq: index, at: event.at ?? 0 }),
  );
  return applyEvents(emptyConversation(sessionId), stamped);
}

/**
 * Structural rules of a turn's event stream: each block starts once per conversation; deltas and
 * updates address a started, unfinished block; every started block completes; the last event is
 * the one `metadata_update` with `turnComplete`.
 */
export function checkEventStream(events: UnsequencedEvent[]): void {
  const started = new Map<string, ConversationBlock['type']>();
  const completed = new Set<string>();
  for (const [index, event] of events.entries()) {
    const where = `event ${index} (${event.type})`;
    expect(event.conversationId, where).toBeTruthy();
    switch (event.type) {
      case 'block_start': {
        const key = `${event.conversationId}/${event.block.id}`;
        expect(started.has(key), `${where}: block ${key} started twice`).toBe(false);
        started.set(key, event.block.type);
        break;
      }
      case 'text_delta':
      case 'block_update': {
        const key = `${event.conversationId}/${event.blockId}`;
        expect(started.has(key), `${where}: block ${key} was not started`).toBe(true);
        expect(completed.has(key), `${where}: block ${key} was already complete`).toBe(false);
        break;
      }
      case 'block_complete': {
        const key = `${event.conversationId}/${event.block.id}`;
        expect(completed.has(key), `${where}: block ${key} completed twice`).toBe(false);
        if (started.has(key)) expect(started.get(key), `${where}: block ${key} changed type`).toBe(event.block.type);
        completed.add(key);
        break;
      }
      case 'metadata_update':
        break;
    }
  }
  for (const key of started.keys()) expect(completed.has(key), `block ${key} started but never completed`).toBe(true);
  const last = events.at(-1);
  expect(last?.type, 'the last event is a metadata_update').toBe('metadata_update');
  const finals = events.filter((event) => event.type === 'metadata_update' && event.metadata.turnComplete);
  expect(finals, 'exactly one metadata_update has turnComplete').toHaveLength(1);
  expect(finals[0]).toBe(last);
  reduce(events);
}

export function finalMetadata(events: UnsequencedEvent[]): TurnMetadata {
  const last = events.at(-1);
  if (last?.type !== 'metadata_update') throw new Error('the turn did not end with metadata_update');
  return last.metadata;
}

export function mainBlocks(events: UnsequencedEvent[]): ConversationBlock[] {
  return reduce(events).blocks;
}

export function systemBlocks(events: UnsequencedEvent[], subtype: SystemBlock['subtype']): SystemBlock[] {
  return mainBlocks(events).filter(
    (block): block is SystemBlock => block.type === 'system' && block.subtype === subtype,
  );
}

export function assistantText(events: UnsequencedEvent[]): string {
  return mainBlocks(events)
    .flatMap((block) => (block.type === 'assistant_text' ? [block.content] : []))
    .join('');
}

export function describeBackendConformance(initializer: ConformanceInitializer): void {
  describe(`${initializer.name} back end conformance`, () => {
    let context: ConformanceContext;
    beforeAll(async () => {
      context = await initializer.create();
    });
    afterAll(async () => {
      await context?.teardown();
    });

    const sessionId = (): string => `conformance-${randomUUID()}`;

    it('describes itself: a name, a continuity and models', () => {
      const description = context.backend.describe();
      expect(description.name).toBe(initializer.name);
      expect(['native', 'managed']).toContain(description.continuity);
      expect(description.models.length).toBeGreaterThan(0);
    });

    it('streams text as block_start, several text_deltas and block_complete with one block id', async () => {
      const text = 'The quick brown fox jumps over the lazy dog near the river bank.';
      context.script.text(text);
      const events = await collect(
        context.backend.execute(
          context.request({ prompt: 'Say the sentence.', sessionId: sessionId(), isNewSession: true }),
        ),
      );
      checkEventStream(events);
      const start = events.find((event) => event.type === 'block_start' && event.block.type === 'assistant_text');
      expect(start, 'an assistant_text block starts').toBeDefined();
      const blockId = start?.type === 'block_start' ? start.block.id : '';
      const deltas = events.filter((event) => event.type === 'text_delta' && event.blockId === blockId);
      expect(deltas.length).toBeGreaterThanOrEqual(2);
      const complete = events.find((event) => event.type === 'block_complete' && event.block.id === blockId);
      expect(
        complete?.type === 'block_complete' && complete.block.type === 'assistant_text'
          ? complete.block.content
          : undefined,
      ).toBe(text);
      expect(deltas.map((event) => (event.type === 'text_delta' ? event.delta : '')).join('')).toBe(text);
      expect(events.findIndex((event) => event === start)).toBeLessThan(
        events.findIndex((event) => event === complete),
      );
    });

    it('ends every turn with one metadata_update carrying turnComplete, usage, a model and a cost or costUnknown', async () => {
      context.script.text('Usage is reported at the end of the turn.');
      const events = await collect(
        context.backend.execute(
          context.request({ prompt: 'Report usage.', sessionId: sessionId(), isNewSession: true }),
        ),
      );
      checkEventStream(events);
      const metadata = finalMetadata(events);
      expect(metadata.turnComplete).toBe(true);
      expect(metadata.usage?.inputTokens).toBeGreaterThan(0);
      expect(metadata.usage?.outputTokens).toBeGreaterThan(0);
      expect(metadata.model).toBeTruthy();
      expect(metadata.costUsd !== undefined || metadata.costUnknown === true, 'cost is known or marked unknown').toBe(
        true,
      );
      expect(reduce(events).metrics.turns).toBe(1);
    });

    it('abort mid-turn ends gracefully: partial text kept, an aborted system block, final metadata, no throw', async () => {
      context.script.stall('Partial answer before the stall');
      const controller = new AbortController();
      const turn = context.backend.execute(
        context.request({
          prompt: 'Start and stall.',
          sessionId: sessionId(),
          isNewSession: true,
          signal: controller.signal,
        }),
      );
      const events = await collect(turn, (event) => {
        if (event.type === 'text_delta' && !controller.signal.aborted) controller.abort();
      });
      checkEventStream(events);
      expect(systemBlocks(events, 'aborted')).toHaveLength(1);
      expect(systemBlocks(events, 'error')).toHaveLength(0);
      expect(assistantText(events).length).toBeGreaterThan(0);
      expect(finalMetadata(events).turnComplete).toBe(true);
    });

    for (const kind of initializer.failureKinds) {
      it(`a ${kind.replace('_', ' ')} ends the turn with an error block that says what happened and what to do, no throw`, async () => {
        const { code } = context.script.failure(kind);
        const events = await collect(
          context.backend.execute(
            context.request({ prompt: 'This request fails.', sessionId: sessionId(), isNewSession: true }),
          ),
        );
        checkEventStream(events);
        const errors = systemBlocks(events, 'error');
        expect(errors).toHaveLength(1);
        const data = errors[0]!.data as Record<string, unknown>;
        expect(data['code']).toBe(code);
        expect(typeof data['retryable']).toBe('boolean');
        expect(String(data['advice'] ?? '').length).toBeGreaterThan(10);
        expect(errors[0]!.content).toContain(String(data['advice']));
        expect(finalMetadata(events).turnComplete).toBe(true);
      });
    }

    it('a turn after a failure works again', async () => {
      context.script.failure(initializer.failureKinds[0]!);
      await collect(
        context.backend.execute(context.request({ prompt: 'fails', sessionId: sessionId(), isNewSession: true })),
      );
      context.script.text('Back to normal after the failure.');
      const events = await collect(
        context.backend.execute(context.request({ prompt: 'works', sessionId: sessionId(), isNewSession: true })),
      );
      checkEventStream(events);
      expect(systemBlocks(events, 'error')).toHaveLength(0);
      expect(assistantText(events)).toBe('Back to normal after the failure.');
    });

    it('a tool call becomes a tool_use block and a tool_result block with the same toolUseId, then the answer', async () => {
      const finalText = 'The tool answered and this is the final reply.';
      const { request, toolName } = context.script.toolCall(finalText);
      const events = await collect(
        context.backend.execute(
          context.request({ prompt: 'Use the tool.', sessionId: sessionId(), isNewSession: true, ...request }),
        ),
      );
      checkEventStream(events);
      const blocks = mainBlocks(events);
      const toolUse = blocks.find((block) => block.type === 'tool_use' && block.name === toolName);
      expect(toolUse, `a tool_use block for ${toolName}`).toBeDefined();
      expect(toolUse?.type === 'tool_use' ? toolUse.status : undefined).toBe('success');
      const toolUseId = toolUse?.type === 'tool_use' ? toolUse.toolUseId : '';
      const result = blocks.find((block) => block.type === 'tool_result' && block.toolUseId === toolUseId);
      expect(result, 'a tool_result for the call').toBeDefined();
      expect(blocks.indexOf(toolUse!)).toBeLessThan(blocks.indexOf(result!));
      expect(assistantText(events)).toContain(finalText);
    });

    if (initializer.differences?.resume !== undefined) {
      it(`does not resume natively: ${initializer.differences.resume}`, () => {
        expect(context.backend.describe().continuity).toBe('managed');
      });
    } else {
      it('resumes its native session: the second turn reaches the model with the first turn in its history', async () => {
        expect(context.backend.describe().continuity).toBe('native');
        expect(context.lastModelRequest, 'native back ends expose the last model request').toBeDefined();
        const nativeSessionId = randomUUID();
        const id = sessionId();
        context.script.text('I will remember the word.');
        const first = await collect(
          context.backend.execute(
            context.request({
              prompt: 'Remember the word PINEAPPLE.',
              sessionId: id,
              nativeSessionId,
              isNewSession: true,
            }),
          ),
        );
        checkEventStream(first);
        expect(finalMetadata(first).nativeSessionId).toBe(nativeSessionId);
        context.script.text('The word was PINEAPPLE.');
        const second = await collect(
          context.backend.execute(
            context.request({ prompt: 'Which word?', sessionId: id, nativeSessionId, isNewSession: false }),
          ),
        );
        checkEventStream(second);
        expect(systemBlocks(second, 'error')).toHaveLength(0);
        const sent = context.lastModelRequest!();
        expect(sent).toContain('Remember the word PINEAPPLE.');
        expect(sent).toContain('I will remember the word.');
        expect(sent).toContain('Which word?');
      });
    }
  });
}
