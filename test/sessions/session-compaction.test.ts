import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { countScriptedTokens, createScriptedBackend, step } from '../../src/backends/index.js';
import {
  MAIN_CONVERSATION,
  estimateTokens,
  isParleyError,
  loadTokenizer,
  type ConversationBlock,
  type UnsequencedEvent,
} from '../../src/conversation/index.js';
import {
  INTERRUPTED_OUTPUT,
  createBackendSummarizer,
  createSessionManager,
  runTurn,
  type BuiltRequest,
  type SessionManager,
  type SessionManagerEvents,
  type SessionManagerOptions,
} from '../../src/sessions/index.js';
import { createMemoryStore, type SessionStore } from '../../src/store/index.js';
import { VALID_CHECKPOINT, deferred, foldingSummarizer, prose, scriptedSummarizer } from './compaction-helpers.js';

let clockValue = 1_700_000_000_000;
const clock = () => clockValue++;

const managers: SessionManager[] = [];
const folders: string[] = [];
afterEach(async () => {
  await Promise.all(managers.splice(0).map((manager) => manager.close()));
  await Promise.all(folders.splice(0).map((folder) => rm(folder, { recursive: true, force: true })));
});

beforeAll(async () => {
  await loadTokenizer();
});

async function open(options: Partial<SessionManagerOptions> = {}): Promise<SessionManager> {
  const manager = await createSessionManager({ store: createMemoryStore(), clock, ...options });
  managers.push(manager);
  return manager;
}

async function draftSession(manager: SessionManager, agentType = 'dev'): Promise<string> {
  return (await manager.createSession({ scope: { kind: 'draft', role: agentType }, agentType })).sessionId;
}

async function fill(manager: SessionManager, sessionId: string, count: number, words = 60, from = 0): Promise<void> {
  for (let index = from; index < from + count; index++) {
    await manager.addMessage(sessionId, {
      role: index % 2 ? 'assistant' : 'user',
      content: `Message ${index}: ${prose(words, index + 1)}`,
    });
  }
}

function recordEvents(manager: SessionManager) {
  const seen = {
    start: [] as Array<SessionManagerEvents['session:compaction-start']>,
    complete: [] as Array<SessionManagerEvents['session:compaction-complete']>,
    error: [] as Array<SessionManagerEvents['session:compaction-error']>,
  };
  manager.on('session:compaction-start', (event) => seen.start.push(event));
  manager.on('session:compaction-complete', (event) => seen.complete.push(event));
  manager.on('session:compaction-error', (event) => seen.error.push(event));
  return seen;
}

async function drain(events: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of events) void _;
}

async function storedMessages(manager: SessionManager, sessionId: string): Promise<ConversationBlock[]> {
  const events = await manager.getEvents(sessionId);
  return events.flatMap((event) =>
    event.type === 'block_complete' &&
    event.conversationId === MAIN_CONVERSATION &&
    (event.block.type === 'user_message' || event.block.type === 'assistant_text')
      ? [event.block]
      : [],
  );
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('budget and compaction across a long session', () => {
  it('a session driven past its budget by 200 scripted turns never sends an over-budget request and never loses a message from disk', async () => {
    const budget = 4_000;
    const summarizer = foldingSummarizer();
    const dataDir = await mkdtemp(join(tmpdir(), 'parley-compaction-'));
    folders.push(dataDir);
    const manager = await createSessionManager({
      dataDir,
      clock,
      tokenBudget: budget,
      summarize: summarizer.summarize,
    });
    managers.push(manager);
    const sessionId = await draftSession(manager);
    const backend = createScriptedBackend({ clock });
    const built: BuiltRequest[] = [];
    const buildRequest = manager.buildRequest.bind(manager);
    manager.buildRequest = async (...args) => {
      const request = await buildRequest(...args);
      built.push(request);
      return request;
    };
    const prompts: string[] = [];
    for (let turn = 0; turn < 200; turn++) {
      const prompt = `Turn ${turn}: ${prose(80, turn + 1)}`;
      prompts.push(prompt);
      await drain((await runTurn(manager, sessionId, { backend, prompt })).events);
    }

    expect(built).toHaveLength(200);
    expect(backend.calls).toHaveLength(200);
    built.forEach((request, index) => {
      const call = backend.calls[index]!;
      expect(request.totalTokens).toBeLessThanOrEqual(budget);
      // What the back end received is exactly what was measured, and it counts no more than estimated.
      expect(call.systemPrompt).toBe(request.systemPrompt);
      expect(call.prompt).toBe(request.userPrompt);
      expect(estimateTokens(call.systemPrompt!) + estimateTokens(call.prompt)).toBeLessThanOrEqual(
        request.estimatedTokens,
      );
      // And by the back end's own count (the scripted model's tokenizer), the request is within the budget too.
      expect(countScriptedTokens(call.systemPrompt) + countScriptedTokens(call.prompt)).toBeLessThanOrEqual(budget);
      // Compaction kept up: nothing had to be left out or cut to fit.
      expect(request.adjustments.omittedMessages).toBe(0);
      expect(request.adjustments.truncated).toEqual([]);
    });

    // Every message is on disk: a new manager over the same folder reads all 400 back.
    await manager.close();
    const reopened = await createSessionManager({ dataDir, clock });
    managers.push(reopened);
    const messages = await storedMessages(reopened, sessionId);
    expect(messages).toHaveLength(400);
    expect(
      messages.filter((block) => block.type === 'user_message').map((block) => (block as { content: string }).content),
    ).toEqual(prompts);
    expect(
      messages
        .filter((block) => block.type === 'assistant_text')
        .map((block) => (block as { content: string }).content),
    ).toEqual(prompts.map((prompt) => `Echo: ${prompt}`));

    const checkpoints = await reopened.listCheckpoints(sessionId);
    expect(checkpoints.length).toBeGreaterThan(5);
    expect(checkpoints.map((checkpoint) => checkpoint.version)).toEqual(checkpoints.map((_, index) => index + 1));
    expect((await reopened.getSession(sessionId)).stats.totalCompactions).toBe(checkpoints.length);
    const last = built[built.length - 1]!;
    expect(last.systemPrompt).toContain('[Earlier conversation (');
    expect(last.systemPrompt).toContain('**Assistant**: Echo: Turn 198:');
    expect(last.systemPrompt).toContain(`1. ${prompts[0]}`);
    // 200 turns of durable appends (one fsync per event): generous on a loaded machine.
  }, 180_000);
});

describe('compaction failures change nothing', () => {
  it('a summarizer that returns garbage leaves the session unchanged (same checkpoint, same request) with an error event', async () => {
    const summarizer = scriptedSummarizer([], 'I am sorry, I cannot summarize this conversation.');
    const manager = await open({ tokenBudget: 3_000, summarize: summarizer.summarize, compactInBackground: false });
    const events = recordEvents(manager);
    const sessionId = await draftSession(manager);
    await fill(manager, sessionId, 40);
    const preview = await manager.previewRequest(sessionId, 'next');
    expect(preview.wouldCompact).toBe(true);
    const lastSeq = (await manager.loadConversation(sessionId)).lastSeq;

    const request = await manager.buildRequest(sessionId, 'next');

    // One attempt and one repair attempt, which told the model what was wrong.
    expect(summarizer.prompts).toHaveLength(2);
    expect(summarizer.prompts[1]).toContain('# Your Previous Answer Was Not Valid');
    expect(summarizer.prompts[1]).toContain('The answer contains no JSON object.');
    expect(events.error).toEqual([
      {
        sessionId,
        trigger: 'auto',
        code: 'COMPACTION_INVALID_OUTPUT',
        message: expect.stringContaining(
          "The summarizer's answer was not a valid checkpoint, even after one repair attempt.",
        ),
        consecutiveFailures: 1,
        autoCompactionStopped: false,
      },
    ]);
    expect(events.complete).toEqual([]);
    expect(await manager.listCheckpoints(sessionId)).toEqual([]);
    expect((await manager.loadConversation(sessionId)).lastSeq).toBe(lastSeq);
    expect((await manager.getSession(sessionId)).stats.totalCompactions).toBe(0);
    expect(request.compacted).toBe(false);
    expect(request.systemPrompt).toBe(preview.systemPrompt);
    expect(request.totalTokens).toBeLessThanOrEqual(3_000);
  });

  it('invalid output gets one repair attempt, which can succeed', async () => {
    const summarizer = scriptedSummarizer([
      '{"completed": "all of it", "inProgress": [], "pending": [], "decisions": [], "blockers": []}',
      VALID_CHECKPOINT,
    ]);
    const manager = await open({ summarize: summarizer.summarize });
    const events = recordEvents(manager);
    const sessionId = await draftSession(manager);
    await fill(manager, sessionId, 10);
    const checkpoint = await manager.forceCompact(sessionId);
    expect(summarizer.prompts[1]).toContain('- completed:');
    expect(checkpoint.version).toBe(1);
    expect(checkpoint.summary.completed).toEqual(['Parsed --verbose in src/cli/args.ts']);
    expect(events.error).toEqual([]);
    expect(events.complete).toHaveLength(1);
  });

  it('after three model failures in a row, automatic compaction builds checkpoints structurally and keeps the session under budget; a model success ends the fallback', async () => {
    let modelUp = false;
    let modelCalls = 0;
    const summarize = async () => {
      modelCalls++;
      if (!modelUp) throw new Error('503 from the model endpoint');
      return VALID_CHECKPOINT;
    };
    const manager = await open({ tokenBudget: 3_000, summarize, compactInBackground: false });
    const events = recordEvents(manager);
    const sessionId = await draftSession(manager);
    await fill(manager, sessionId, 40);
    for (let attempt = 0; attempt < 3; attempt++)
      expect((await manager.buildRequest(sessionId, 'next')).totalTokens).toBeLessThanOrEqual(3_000);

    expect(modelCalls).toBe(3);
    expect(events.error.map((event) => [event.code, event.consecutiveFailures, event.autoCompactionStopped])).toEqual([
      ['COMPACTION_SUMMARIZER_FAILED', 1, false],
      ['COMPACTION_SUMMARIZER_FAILED', 2, false],
      ['COMPACTION_SUMMARIZER_FAILED', 3, false],
    ]);
    expect(events.error[2]!.message).toContain('503 from the model endpoint');
    expect(events.error[2]!.message).toContain(
      'After 3 failures in a row of the model summarizer, this and later automatic compactions build the checkpoint structurally (no model)',
    );
    // The third attempt fell back at once: the session is compacted, by the structural builder.
    expect(events.complete).toEqual([
      expect.objectContaining({ trigger: 'auto', version: 1, summarizer: { kind: 'structural', fallback: true } }),
    ]);
    expect(manager.getCompactionStatus(sessionId)).toEqual({
      running: false,
      consecutiveFailures: 3,
      structuralFallback: true,
      autoCompactionStopped: false,
    });
    const log = await manager.getEvents(sessionId);
    const notices = log.flatMap((event) =>
      event.type === 'block_complete' && event.block.type === 'system' && event.block.subtype === 'compaction'
        ? [event.block.content]
        : [],
    );
    expect(notices[0]).toContain('built structurally because the model summarizer failed repeatedly');

    // The session keeps growing: each time it reaches the threshold it is compacted structurally, without asking the model,
    // and no message has to be left out of the request to fit the budget.
    for (let round = 0; round < 6; round++) {
      await fill(manager, sessionId, 14, 60, 40 + round * 14);
      const request = await manager.buildRequest(sessionId, 'next');
      expect(request.totalTokens).toBeLessThanOrEqual(3_000);
      expect(request.adjustments.omittedMessages).toBe(0);
    }
    expect(modelCalls).toBe(3);
    const checkpoints = await manager.listCheckpoints(sessionId);
    expect(checkpoints.length).toBeGreaterThanOrEqual(4);
    expect(
      checkpoints.every(
        (checkpoint) => checkpoint.summarizer?.kind === 'structural' && checkpoint.summarizer.fallback === true,
      ),
    ).toBe(true);
    expect(events.error).toHaveLength(3);

    // forceCompact still asks the model; its success ends the fallback and resets the count.
    modelUp = true;
    const checkpoint = await manager.forceCompact(sessionId);
    expect(modelCalls).toBe(4);
    expect(checkpoint.summarizer).toEqual({ kind: 'model' });
    expect(checkpoint.summary.completed).toEqual(['Parsed --verbose in src/cli/args.ts']);
    expect(manager.getCompactionStatus(sessionId)).toEqual({
      running: false,
      consecutiveFailures: 0,
      structuralFallback: false,
      autoCompactionStopped: false,
    });
  });

  it('three failures in a row of the structural builder stop automatic compaction instead of looping; forceCompact still works and a success re-arms it', async () => {
    const manager = await open({ tokenBudget: 3_000, compactInBackground: false, compaction: { minReduction: 0.99 } });
    const events = recordEvents(manager);
    const sessionId = await draftSession(manager);
    await fill(manager, sessionId, 40);
    for (let attempt = 0; attempt < 4; attempt++)
      expect((await manager.buildRequest(sessionId, 'next')).totalTokens).toBeLessThanOrEqual(3_000);
    expect(events.error.map((event) => [event.code, event.consecutiveFailures, event.autoCompactionStopped])).toEqual([
      ['COMPACTION_NO_PROGRESS', 1, false],
      ['COMPACTION_NO_PROGRESS', 2, false],
      ['COMPACTION_NO_PROGRESS', 3, true],
    ]);
    expect(events.error[2]!.message).toContain(
      'Automatic compaction is now stopped for this session after 3 failures in a row (the structural checkpoint builder: no model is configured)',
    );
    expect(manager.getCompactionStatus(sessionId)).toEqual({
      running: false,
      consecutiveFailures: 3,
      structuralFallback: false,
      autoCompactionStopped: true,
    });
    expect((await manager.previewRequest(sessionId, 'next')).wouldCompact).toBe(false);
  });

  it('a compaction that does not cut the request by at least 5 % counts as failed and is not kept', async () => {
    const bloated = JSON.stringify({
      completed: Array.from({ length: 40 }, (_, index) => `${index}: ${prose(120, index)}`),
      inProgress: [],
      pending: [],
      decisions: [],
      blockers: [],
    });
    const summarizer = scriptedSummarizer([], bloated);
    const manager = await open({ summarize: summarizer.summarize });
    const events = recordEvents(manager);
    const sessionId = await draftSession(manager);
    await fill(manager, sessionId, 10);
    const error = await failure(manager.forceCompact(sessionId));
    expect(isParleyError(error, 'COMPACTION_NO_PROGRESS')).toBe(true);
    expect((error as Error).message).toMatch(
      /would cut the request only from \d+ to \d+ tokens \(at least 5 % is required\)/,
    );
    expect(events.error.map((event) => event.code)).toEqual(['COMPACTION_NO_PROGRESS']);
    expect(await manager.listCheckpoints(sessionId)).toEqual([]);
  });

  it('without a summarizer, checkpoints are built structurally: automatic compaction keeps the request under budget, and forceCompact works', async () => {
    const manager = await open({ tokenBudget: 3_000, compactInBackground: false });
    const events = recordEvents(manager);
    const sessionId = await draftSession(manager);
    await fill(manager, sessionId, 40);
    const request = await manager.buildRequest(sessionId, 'next');
    expect(request.compacted).toBe(true);
    expect(request.totalTokens).toBeLessThanOrEqual(3_000);
    expect(request.adjustments.omittedMessages).toBe(0);
    expect(request.systemPrompt).toContain("(Built without a model, from the conversation's structure");
    expect(events.error).toEqual([]);
    expect(events.complete).toEqual([
      expect.objectContaining({ trigger: 'auto', version: 1, summarizer: { kind: 'structural' } }),
    ]);
    await fill(manager, sessionId, 6, 60, 40);
    const checkpoint = await manager.forceCompact(sessionId);
    expect(checkpoint.version).toBe(2);
    expect(checkpoint.summarizer).toEqual({ kind: 'structural' });
    expect(checkpoint.pinned).toEqual([`Message 0: ${prose(60, 1)}`]);
    expect(checkpoint.summary.completed.some((item) => item.startsWith('Assistant answered: Message '))).toBe(true);
    expect(events.complete[1]!.tokensAfter).toBeLessThan(events.complete[1]!.tokensBefore);
  });

  it('the structural builder keeps tool work, errors, pinned intent and live workers of a real history', async () => {
    const manager = await open({ tailTokens: 0 });
    const sessionId = await draftSession(manager);
    const block = (value: ConversationBlock): UnsequencedEvent => ({
      type: 'block_complete',
      conversationId: MAIN_CONVERSATION,
      block: value,
    });
    await manager.addMessage(sessionId, {
      role: 'user',
      content: 'Never touch the generated files under src/gen.',
      pinned: true,
    });
    const unsequenced: UnsequencedEvent[] = [];
    for (let index = 0; index < 8; index++) {
      unsequenced.push(
        block({
          id: `u${index}`,
          type: 'user_message',
          content: `Step ${index}: fix module ${index}. ${prose(40, index + 1)}`,
          createdAt: clock(),
        }),
      );
      unsequenced.push(
        block({
          id: `c${index}`,
          type: 'tool_use',
          toolUseId: `e${index}`,
          name: 'Edit',
          input: { file_path: `src/module-${index}.ts`, old_string: 'a', new_string: 'b' },
          status: 'success',
          createdAt: clock(),
        }),
      );
      unsequenced.push(
        block({
          id: `r${index}`,
          type: 'tool_result',
          toolUseId: `e${index}`,
          content: index === 5 ? 'old_string not found in src/module-5.ts' : prose(200, index),
          isError: index === 5,
          createdAt: clock(),
        }),
      );
      unsequenced.push(
        block({
          id: `a${index}`,
          type: 'assistant_text',
          content: `Fixed module ${index}. ${prose(80, index + 30)}`,
          createdAt: clock(),
        }),
      );
    }
    unsequenced.push(
      block({
        id: 'err',
        type: 'system',
        subtype: 'error',
        content: 'The back end failed: connection reset.',
        createdAt: clock(),
      }),
    );
    await manager.appendEvents(sessionId, unsequenced);
    await manager.appendEvents(sessionId, [
      {
        type: 'block_start',
        conversationId: MAIN_CONVERSATION,
        block: {
          id: 'w1',
          type: 'subagent',
          subagentId: 'agent-42',
          name: 'test-runner',
          input: 'run the tests',
          status: 'running',
          createdAt: clock(),
        },
      },
    ]);
    await fill(manager, sessionId, 2, 60, 100);
    const checkpoint = await manager.forceCompact(sessionId);
    expect(checkpoint.summarizer).toEqual({ kind: 'structural' });
    expect(checkpoint.pinned).toEqual(['Never touch the generated files under src/gen.']);
    expect(checkpoint.liveHandles).toEqual([
      { id: 'agent-42', kind: 'worker', label: 'test-runner', status: 'running' },
    ]);
    expect(checkpoint.summary.completed).toContain('File `src/module-7.ts`: Edit ×1');
    expect(checkpoint.summary.blockers).toEqual([
      '`Edit` (src/module-5.ts) failed: old_string not found in src/module-5.ts',
      'Error: The back end failed: connection reset.',
    ]);
    const request = await manager.buildRequest(sessionId, 'next');
    expect(request.systemPrompt).toContain(
      '- `Edit` (src/module-5.ts) failed: old_string not found in src/module-5.ts',
    );
    expect(request.systemPrompt).toContain('## Live Workers\n\n- agent-42 (worker: test-runner): running');
  });

  it('closing the manager cancels a running compaction and changes nothing', async () => {
    const manager = await createSessionManager({
      store: createMemoryStore(),
      clock,
      summarize: ({ signal }) =>
        new Promise((_, reject) => signal?.addEventListener('abort', () => reject(new Error('aborted')))),
    });
    const sessionId = await draftSession(manager);
    await fill(manager, sessionId, 10);
    const pending = failure(manager.forceCompact(sessionId));
    await new Promise((resolve) => setImmediate(resolve));
    await manager.close();
    const error = await pending;
    expect(isParleyError(error, 'COMPACTION_CANCELLED')).toBe(true);
    expect(await manager.store.listCheckpoints(sessionId)).toEqual([]);
  });
});

describe('what a compaction keeps', () => {
  it('records every checkpoint version, each readable, with what it covers and its tokens', async () => {
    const summarizer = foldingSummarizer();
    const manager = await open({ summarize: summarizer.summarize, tailTokens: 200 });
    const session = await manager.getOrCreateSession({
      type: 'task',
      agentType: 'dev',
      featureId: 'cli',
      taskId: 'flag',
      taskState: 'in_dev',
    });
    const sessionId = session.sessionId;
    for (let round = 0; round < 3; round++) {
      await fill(manager, sessionId, 12, 60, round * 12);
      await manager.forceCompact(sessionId);
    }
    await manager.updateRalphLoop(sessionId, { currentIteration: 2 });
    const checkpoints = await manager.listCheckpoints(sessionId);
    expect(checkpoints.map((checkpoint) => [checkpoint.version, checkpoint.trigger])).toEqual([
      [1, 'manual'],
      [2, 'manual'],
      [3, 'manual'],
      [4, 'update'],
    ]);
    for (const checkpoint of checkpoints)
      expect(await manager.store.readCheckpoint(sessionId, checkpoint.version)).toEqual(checkpoint);
    const covers = checkpoints.map((checkpoint) => checkpoint.covers);
    for (let index = 1; index < 3; index++) {
      expect(covers[index]!.throughSeq).toBeGreaterThan(covers[index - 1]!.throughSeq);
      expect(covers[index]!.messageCount).toBeGreaterThan(covers[index - 1]!.messageCount);
      expect(checkpoints[index]!.tokens.totalSaved).toBeGreaterThan(checkpoints[index - 1]!.tokens.totalSaved);
    }
    expect(covers[0]).toMatchObject({
      fromSeq: 0,
      oldestMessageTimestamp: expect.any(String),
      newestMessageTimestamp: expect.any(String),
    });
    expect(checkpoints[3]!.covers).toEqual(checkpoints[2]!.covers);
    expect(checkpoints[0]!.tokens.checkpoint).toBeGreaterThan(0);
    expect(checkpoints[0]!.tokens.lastCompactionInput).toBeGreaterThan(checkpoints[0]!.tokens.checkpoint);
  });

  it('a tool call and its result are never split by a compaction, and a call with no result is closed as interrupted', async () => {
    const summarizer = foldingSummarizer();
    const manager = await open({ summarize: summarizer.summarize });
    const sessionId = await draftSession(manager);
    const block = (value: ConversationBlock): UnsequencedEvent => ({
      type: 'block_complete',
      conversationId: MAIN_CONVERSATION,
      block: value,
    });
    const unsequenced: UnsequencedEvent[] = [];
    for (let index = 0; index < 12; index++) {
      unsequenced.push(
        block({
          id: `u${index}`,
          type: 'user_message',
          content: `Step ${index}: ${prose(30, index + 1)}`,
          createdAt: clock(),
        }),
      );
      // Two parallel calls whose results arrive in the opposite order.
      unsequenced.push(
        block({
          id: `ca${index}`,
          type: 'tool_use',
          toolUseId: `a${index}`,
          name: 'Read',
          input: { path: `a${index}.ts` },
          status: 'success',
          createdAt: clock(),
        }),
      );
      unsequenced.push(
        block({
          id: `cb${index}`,
          type: 'tool_use',
          toolUseId: `b${index}`,
          name: 'Grep',
          input: { pattern: `b${index}` },
          status: 'success',
          createdAt: clock(),
        }),
      );
      unsequenced.push(
        block({
          id: `rb${index}`,
          type: 'tool_result',
          toolUseId: `b${index}`,
          content: `grep output ${index} ${prose(40, index + 50)}`,
          isError: false,
          createdAt: clock(),
        }),
      );
      unsequenced.push(
        block({
          id: `ra${index}`,
          type: 'tool_result',
          toolUseId: `a${index}`,
          content: `file ${index} ${prose(40, index + 90)}`,
          isError: false,
          createdAt: clock(),
        }),
      );
      unsequenced.push(
        block({ id: `as${index}`, type: 'assistant_text', content: `Read both ${index}.`, createdAt: clock() }),
      );
    }
    unsequenced.push(
      block({
        id: 'crash',
        type: 'tool_use',
        toolUseId: 'crashed',
        name: 'Bash',
        input: { command: 'npm test' },
        status: 'running',
        createdAt: clock(),
      }),
    );
    unsequenced.push(block({ id: 'after', type: 'user_message', content: 'Are you still there?', createdAt: clock() }));
    await manager.appendEvents(sessionId, unsequenced);
    await manager.updateSettings(sessionId, { tailTokens: 600 });
    await manager.forceCompact(sessionId);
    const request = await manager.buildRequest(sessionId, 'continue');
    const together = (text: string, id: string) => {
      const called = text.includes(`(call ${id}) with input`);
      const answered = text.includes(`**Tool result** (call ${id})`);
      expect(called).toBe(answered);
      return called;
    };
    let folded = 0;
    let kept = 0;
    for (let index = 0; index < 12; index++) {
      for (const id of [`a${index}`, `b${index}`]) {
        if (together(summarizer.prompts[0]!, id)) folded++;
        if (together(request.systemPrompt, id)) kept++;
      }
    }
    expect(folded).toBeGreaterThan(0);
    expect(kept).toBeGreaterThan(0);
    expect(folded + kept).toBe(24);
    expect(request.systemPrompt).toContain(`**Tool result** (call crashed): ${INTERRUPTED_OUTPUT}`);
  });

  it('the first user message and pinned messages survive verbatim, with the most recent requests', async () => {
    const summarizer = foldingSummarizer();
    const manager = await open({ summarize: summarizer.summarize, tailTokens: 100 });
    const sessionId = await draftSession(manager);
    await manager.addMessage(sessionId, {
      role: 'user',
      content: 'Goal: a CLI that renames photos by their EXIF date.',
    });
    await fill(manager, sessionId, 10, 60, 1);
    await manager.addMessage(sessionId, { role: 'user', content: 'Never overwrite an existing file.', pinned: true });
    await fill(manager, sessionId, 10, 60, 11);
    await manager.addMessage(sessionId, { role: 'user', content: 'Also support --dry-run.' });
    await fill(manager, sessionId, 8, 60, 22);
    const checkpoint = await manager.forceCompact(sessionId);
    expect(checkpoint.pinned).toEqual([
      'Goal: a CLI that renames photos by their EXIF date.',
      'Never overwrite an existing file.',
    ]);
    expect(checkpoint.userRequests).toContain('Also support --dry-run.');
    const request = await manager.buildRequest(sessionId, 'next');
    expect(request.systemPrompt).toContain(
      '## User Intent (verbatim)\n\n1. Goal: a CLI that renames photos by their EXIF date.\n2. Never overwrite an existing file.',
    );
    expect(request.systemPrompt).toContain('## Recent User Requests (verbatim)');
    // A second compaction keeps them (they are carried from checkpoint to checkpoint).
    await fill(manager, sessionId, 20, 60, 40);
    const next = await manager.forceCompact(sessionId);
    expect(next.pinned).toEqual(checkpoint.pinned);
  });

  it('messages added while a compaction runs are kept after it, and appending does not wait for it', async () => {
    const called = deferred<void>();
    const answer = deferred<string>();
    const manager = await open({
      summarize: async () => {
        called.resolve();
        return answer.promise;
      },
    });
    const sessionId = await draftSession(manager);
    await fill(manager, sessionId, 20);
    let compactionDone = false;
    const compaction = manager.forceCompact(sessionId).finally(() => (compactionDone = true));
    await called.promise;
    const added = [];
    for (let index = 0; index < 3; index++)
      added.push(await manager.addMessage(sessionId, { role: 'user', content: `Added during compaction ${index}` }));
    expect(compactionDone).toBe(false);
    answer.resolve(VALID_CHECKPOINT);
    const checkpoint = await compaction;
    for (const message of added) expect(message.seq).toBeGreaterThan(checkpoint.covers.throughSeq);
    const request = await manager.buildRequest(sessionId, 'next');
    for (let index = 0; index < 3; index++)
      expect(request.systemPrompt).toContain(`**User**: Added during compaction ${index}`);
    expect((await storedMessages(manager, sessionId)).length).toBe(23);
  });

  it('runs one compaction per session at a time: a second request joins the running one', async () => {
    const answer = deferred<string>();
    const called = deferred<void>();
    let calls = 0;
    const manager = await open({
      summarize: async () => {
        calls++;
        called.resolve();
        return answer.promise;
      },
    });
    const events = recordEvents(manager);
    const sessionId = await draftSession(manager);
    await fill(manager, sessionId, 20);
    const first = manager.forceCompact(sessionId);
    const second = manager.forceCompact(sessionId, { instructions: 'ignored: joins the running one' });
    await called.promise;
    expect(manager.getCompactionStatus(sessionId).running).toBe(true);
    const third = manager.forceCompact(sessionId);
    answer.resolve(VALID_CHECKPOINT);
    const [a, b, c] = await Promise.all([first, second, third]);
    expect(calls).toBe(1);
    expect(a).toEqual(b);
    expect(c).toEqual(a);
    expect(events.start).toHaveLength(1);
    expect(events.complete).toHaveLength(1);
  });

  it('a running compaction is in the status with its start time, trigger, tokens and summarizer, and is gone once it has ended', async () => {
    const gate = deferred<string>();
    const called = deferred<void>();
    const manager = await open({
      summarize: async () => {
        called.resolve();
        return gate.promise;
      },
    });
    const events = recordEvents(manager);
    const sessionId = await draftSession(manager);
    await fill(manager, sessionId, 20);
    const before = clockValue;
    const compacting = manager.forceCompact(sessionId);
    await called.promise;
    const status = manager.getCompactionStatus(sessionId);
    expect(status).toEqual({
      running: true,
      startedAt: expect.any(String),
      trigger: 'manual',
      tokensBefore: events.start[0]!.tokensBefore,
      summarizer: { kind: 'model' },
      consecutiveFailures: 0,
      structuralFallback: false,
      autoCompactionStopped: false,
    });
    const startedAt = Date.parse(status.startedAt!);
    expect(startedAt).toBeGreaterThanOrEqual(before);
    expect(startedAt).toBeLessThan(clockValue);
    expect(status.tokensBefore).toBeGreaterThan(0);
    let runningWhenCompleted: boolean | undefined;
    manager.on(
      'session:compaction-complete',
      () => (runningWhenCompleted = manager.getCompactionStatus(sessionId).running),
    );
    gate.resolve(VALID_CHECKPOINT);
    await compacting;
    expect(runningWhenCompleted).toBe(false);
    expect(manager.getCompactionStatus(sessionId)).toEqual({
      running: false,
      consecutiveFailures: 0,
      structuralFallback: false,
      autoCompactionStopped: false,
    });
  });

  it('a running compaction that fails leaves the status not running, the failure counted', async () => {
    const gate = deferred<void>();
    const called = deferred<void>();
    const manager = await open({
      summarize: async () => {
        called.resolve();
        await gate.promise;
        throw new Error('503 from the model endpoint');
      },
    });
    const sessionId = await draftSession(manager);
    await fill(manager, sessionId, 20);
    const compacting = failure(manager.forceCompact(sessionId));
    await called.promise;
    expect(manager.getCompactionStatus(sessionId)).toMatchObject({
      running: true,
      trigger: 'manual',
      summarizer: { kind: 'model' },
    });
    let runningWhenFailed: boolean | undefined;
    manager.on('session:compaction-error', () => (runningWhenFailed = manager.getCompactionStatus(sessionId).running));
    gate.resolve();
    expect(isParleyError(await compacting)).toBe(true);
    expect(runningWhenFailed).toBe(false);
    expect(manager.getCompactionStatus(sessionId)).toEqual({
      running: false,
      consecutiveFailures: 1,
      structuralFallback: false,
      autoCompactionStopped: false,
    });
  });

  it('without a model, a running compaction says the structural builder writes it', async () => {
    const manager = await open();
    const sessionId = await draftSession(manager);
    await fill(manager, sessionId, 20);
    let seen: unknown;
    manager.on('session:compaction-start', () => (seen = manager.getCompactionStatus(sessionId)));
    await manager.forceCompact(sessionId);
    expect(seen).toMatchObject({ running: true, trigger: 'manual', summarizer: { kind: 'structural' } });
    expect(manager.getCompactionStatus(sessionId).running).toBe(false);
  });

  it('keeps running workers as live handles', async () => {
    const manager = await open({ summarize: foldingSummarizer().summarize, tailTokens: 0 });
    const sessionId = await draftSession(manager);
    await fill(manager, sessionId, 6);
    await manager.appendEvents(sessionId, [
      {
        type: 'block_start',
        conversationId: MAIN_CONVERSATION,
        block: {
          id: 'w1',
          type: 'subagent',
          subagentId: 'agent-42',
          name: 'test-runner',
          input: 'run the tests',
          status: 'running',
          createdAt: clock(),
        },
      },
    ]);
    await fill(manager, sessionId, 2, 60, 6);
    const checkpoint = await manager.forceCompact(sessionId);
    expect(checkpoint.liveHandles).toEqual([
      { id: 'agent-42', kind: 'worker', label: 'test-runner', status: 'running' },
    ]);
    expect((await manager.buildRequest(sessionId, 'next')).systemPrompt).toContain(
      '## Live Workers\n\n- agent-42 (worker: test-runner): running',
    );
  });

  it('passes the user instructions to the summarizer and records them, with stats and a compaction block in the log', async () => {
    const summarizer = foldingSummarizer();
    const manager = await open({ summarize: summarizer.summarize });
    const events = recordEvents(manager);
    const sessionId = await draftSession(manager);
    await fill(manager, sessionId, 20);
    const checkpoint = await manager.forceCompact(sessionId, { instructions: 'Keep every file path exact.' });
    expect(summarizer.prompts[0]).toContain(
      '# Instructions From The User For This Compaction\n\nKeep every file path exact.',
    );
    expect(checkpoint.instructions).toBe('Keep every file path exact.');
    const session = await manager.getSession(sessionId);
    expect(session.stats.totalCompactions).toBe(1);
    expect(session.stats.lastCompactionAt).toEqual(expect.any(String));
    const [complete] = events.complete;
    expect(complete).toMatchObject({ sessionId, trigger: 'manual', version: 1 });
    expect(complete!.tokensAfter).toBeLessThan(complete!.tokensBefore);
    expect(events.start).toEqual([{ sessionId, trigger: 'manual', tokensBefore: complete!.tokensBefore }]);
    const log = await manager.getEvents(sessionId);
    const system = log.find(
      (event) =>
        event.type === 'block_complete' && event.block.type === 'system' && event.block.subtype === 'compaction',
    );
    expect(system?.type === 'block_complete' && system.block.type === 'system' && system.block.data).toMatchObject({
      version: 1,
      trigger: 'manual',
      throughSeq: checkpoint.covers.throughSeq,
    });
    expect((await manager.buildRequest(sessionId, 'next')).systemPrompt).not.toContain('Compacted (manual)');
  });

  it('refuses to compact when there is nothing to fold', async () => {
    const manager = await open({ summarize: foldingSummarizer().summarize });
    const sessionId = await draftSession(manager);
    expect(isParleyError(await failure(manager.forceCompact(sessionId)), 'COMPACTION_NOTHING_TO_COMPACT')).toBe(true);
  });
});

describe('requests', () => {
  it('previewRequest has no side effects: no compaction, no writes', async () => {
    const store = createMemoryStore();
    const writes: string[] = [];
    for (const name of [
      'append',
      'writeCheckpoint',
      'writeContext',
      'writeAgentDescription',
      'updateSession',
    ] as const) {
      const original = (store[name] as (...args: unknown[]) => Promise<unknown>).bind(store);
      (store as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
        writes.push(name);
        return original(...args);
      };
    }
    const summarizer = foldingSummarizer();
    const manager = await open({
      store: store as SessionStore,
      tokenBudget: 3_000,
      summarize: summarizer.summarize,
      compactInBackground: false,
    });
    const sessionId = await draftSession(manager);
    await fill(manager, sessionId, 40);
    await new Promise((resolve) => setImmediate(resolve));
    writes.length = 0;
    const lastSeq = (await manager.loadConversation(sessionId)).lastSeq;
    const preview = await manager.previewRequest(sessionId, 'next');
    const again = await manager.previewRequest(sessionId, 'next');
    expect(preview.wouldCompact).toBe(true);
    expect(again).toEqual(preview);
    expect(writes).toEqual([]);
    expect(summarizer.prompts).toEqual([]);
    expect((await manager.loadConversation(sessionId)).lastSeq).toBe(lastSeq);
    expect(await store.readContext(sessionId)).toBeUndefined();

    const built = await manager.buildRequest(sessionId, 'next');
    expect(built.compacted).toBe(true);
    expect(summarizer.prompts.length).toBeGreaterThan(0);
    const context = await store.readContext(sessionId);
    expect(context).toMatchObject({ sessionId, tokens: built.sections.context });
    expect((await store.readAgentDescription(sessionId))?.agentType).toBe('dev');
  });

  it('calibrates estimates against the input tokens the back end reports, and applies the ratio to later requests', async () => {
    const manager = await open();
    const sessionId = await draftSession(manager);
    await fill(manager, sessionId, 6);
    const backend = createScriptedBackend({
      clock,
      turns: [
        (call) => [
          step.text('ok'),
          step.usage({
            inputTokens: Math.round(1.5 * (estimateTokens(call.systemPrompt ?? '') + estimateTokens(call.prompt))),
          }),
        ],
      ],
    });
    // The turn carries no tools, and its request says so: the preview is of that same request.
    const before = await manager.previewRequest(sessionId, 'one more', { toolNames: [] });
    expect(manager.getTokenCalibration(sessionId)).toEqual({ ratio: 1, samples: 0 });
    await drain((await runTurn(manager, sessionId, { backend, prompt: 'one more' })).events);
    const calibration = manager.getTokenCalibration(sessionId);
    expect(calibration.samples).toBe(1);
    // The estimate is a sum over the request's parts, a little above the count of the joined text.
    expect(calibration.ratio).toBe(calibration.lastReal! / calibration.lastEstimated!);
    expect(calibration.ratio).toBeGreaterThan(1.47);
    expect(calibration.ratio).toBeLessThanOrEqual(1.5);
    expect(calibration.lastEstimated).toBe(before.estimatedTokens);
    expect(calibration.lastReal).toBe(
      Math.round(1.5 * (estimateTokens(backend.calls[0]!.systemPrompt!) + estimateTokens(backend.calls[0]!.prompt))),
    );
    const after = await manager.previewRequest(sessionId, 'next');
    expect(after.calibrationRatio).toBe(calibration.ratio);
    expect(after.totalTokens).toBeGreaterThanOrEqual(Math.floor(after.estimatedTokens * 1.49));
  });

  it('budget and threshold are set per agent type and per session, the session winning', async () => {
    const manager = await open({
      tokenBudget: 4_000,
      agentTypes: { qa: { compactionThreshold: 0.5 } },
      summarize: foldingSummarizer().summarize,
      compactInBackground: false,
    });
    const qa = await draftSession(manager, 'qa');
    const dev = await draftSession(manager, 'dev');
    await fill(manager, qa, 32, 60);
    await fill(manager, dev, 32, 60);
    const qaPreview = await manager.previewRequest(qa, 'next');
    const devPreview = await manager.previewRequest(dev, 'next');
    expect(qaPreview.totalTokens).toBeGreaterThan(2_000);
    expect(qaPreview.totalTokens).toBeLessThan(3_600);
    expect([qaPreview.threshold, qaPreview.wouldCompact]).toEqual([2_000, true]);
    expect([devPreview.threshold, devPreview.wouldCompact]).toEqual([3_600, false]);
    await manager.updateSettings(dev, { compactionThreshold: 0.5, tokenBudget: 3_000 });
    const changed = await manager.previewRequest(dev, 'next');
    expect([changed.budget, changed.threshold, changed.wouldCompact]).toEqual([3_000, 1_500, true]);
    expect(changed.totalTokens).toBeLessThanOrEqual(3_000);
  });

  it('a dev-task session carries the Ralph Loop, updated through the manager as new checkpoint versions', async () => {
    const manager = await open({ summarize: foldingSummarizer().summarize });
    const { sessionId } = await manager.getOrCreateSession({
      type: 'task',
      agentType: 'dev',
      featureId: 'cli',
      taskId: 'flag',
      taskState: 'in_dev',
    });
    const first = await manager.updateRalphLoop(sessionId, {
      currentIteration: 1,
      failedChecks: ['test'],
      lastError: 'expected 2 to be 3',
    });
    expect(first).toMatchObject({
      version: 1,
      trigger: 'update',
      ralphLoop: { currentIteration: 1, passedChecks: [], failedChecks: ['test'], lastError: 'expected 2 to be 3' },
    });
    await fill(manager, sessionId, 20);
    expect((await manager.buildRequest(sessionId, 'next')).systemPrompt).toContain(
      '## Ralph Loop\n\n- Iteration: 1\n- Passed checks: (none)\n- Failed checks: test\n- Last error: expected 2 to be 3',
    );
    const compacted = await manager.forceCompact(sessionId);
    expect(compacted.ralphLoop).toEqual(first.ralphLoop);
    const passed = await manager.updateRalphLoop(sessionId, {
      currentIteration: 2,
      passedChecks: ['build', 'lint', 'test'],
      failedChecks: [],
      lastError: null,
    });
    expect(passed.version).toBe(3);
    expect(passed.summary).toEqual(compacted.summary);
    expect(passed.covers).toEqual(compacted.covers);
    expect(passed.ralphLoop).toEqual({
      currentIteration: 2,
      passedChecks: ['build', 'lint', 'test'],
      failedChecks: [],
    });

    // An update made while a compaction runs is kept by the checkpoint that compaction writes.
    const answer = deferred<string>();
    const called = deferred<void>();
    const slow = await open({
      summarize: async () => {
        called.resolve();
        return answer.promise;
      },
    });
    const slowSession = (
      await slow.getOrCreateSession({
        type: 'task',
        agentType: 'dev',
        featureId: 'cli',
        taskId: 'other',
        taskState: 'in_dev',
      })
    ).sessionId;
    await fill(slow, slowSession, 20);
    const compaction = slow.forceCompact(slowSession);
    await called.promise;
    const during = await slow.updateRalphLoop(slowSession, { currentIteration: 7 });
    answer.resolve(VALID_CHECKPOINT);
    const landed = await compaction;
    expect([during.version, landed.version]).toEqual([1, 2]);
    expect(landed.ralphLoop?.currentIteration).toBe(7);
    expect(landed.summary.completed).toEqual(['Parsed --verbose in src/cli/args.ts']);

    const pm = await manager.getOrCreateSession({ type: 'feature', agentType: 'pm', featureId: 'cli' });
    expect(
      isParleyError(await failure(manager.updateRalphLoop(pm.sessionId, { currentIteration: 1 })), 'INVALID_INPUT'),
    ).toBe(true);
    expect(
      isParleyError(await failure(manager.updateRalphLoop(sessionId, { currentIteration: -1 })), 'INVALID_INPUT'),
    ).toBe(true);
  });

  it('createBackendSummarizer runs one tool-less turn on any back end and returns its text; a failed turn rejects', async () => {
    const backend = createScriptedBackend({
      clock,
      turns: [
        [step.text(VALID_CHECKPOINT, { chunks: [VALID_CHECKPOINT.slice(0, 20), VALID_CHECKPOINT.slice(20)] })],
        [step.error('rate limited')],
      ],
    });
    const summarize = createBackendSummarizer(backend, { model: 'scripted-1' });
    const manager = await open({ summarize });
    const sessionId = await draftSession(manager);
    await fill(manager, sessionId, 10);
    const checkpoint = await manager.forceCompact(sessionId);
    expect(checkpoint.summary.decisions).toEqual(['A boolean flag, no levels (user asked for simplicity)']);
    expect(backend.calls[0]).toMatchObject({ tools: [], isNewSession: true, model: 'scripted-1' });
    expect(backend.calls[0]!.systemPrompt).toContain('You are a session compaction agent.');
    expect(backend.calls[0]!.sessionId).toMatch(/^compaction-/);
    const error = await failure(summarize({ systemPrompt: 's', prompt: 'p' }));
    expect(isParleyError(error, 'SUMMARIZER_FAILED')).toBe(true);
    expect((error as Error).message).toContain('rate limited');
  });

  it('does not try to compact when the history is not what fills the request (a huge new message is cut instead)', async () => {
    const summarizer = foldingSummarizer();
    const manager = await open({ tokenBudget: 3_000, summarize: summarizer.summarize });
    const events = recordEvents(manager);
    const sessionId = await draftSession(manager);
    await fill(manager, sessionId, 4, 20);
    const request = await manager.buildRequest(sessionId, `Please read this: ${prose(6_000, 3)}`);
    expect(request.totalTokens).toBeLessThanOrEqual(3_000);
    expect(request.userPrompt).toContain('from the middle of your message');
    expect(summarizer.prompts).toEqual([]);
    expect(events.error).toEqual([]);
    expect(manager.getCompactionStatus(sessionId).consecutiveFailures).toBe(0);
  });

  it("counts with the caller's own tokenizer when one is given", async () => {
    const manager = await open({ countTokens: (text) => text.length });
    const sessionId = await draftSession(manager);
    const message = await manager.addMessage(sessionId, { role: 'user', content: 'twelve chars' });
    expect(message.tokens).toBe(12);
    const request = await manager.buildRequest(sessionId, 'abc');
    expect(request.sections.userPrompt).toBe(3);
    expect(request.estimatedTokens).toBeGreaterThanOrEqual(request.systemPrompt.length + 3);
  });

  it('refuses a bad budget or threshold before opening anything', async () => {
    for (const options of [
      { tokenBudget: 0 },
      { tokenBudget: 1.5 },
      { compactionThreshold: 0 },
      { compactionThreshold: 1.2 },
    ]) {
      const error = await failure(createSessionManager({ store: createMemoryStore(), ...options }));
      expect(isParleyError(error, 'INVALID_INPUT')).toBe(true);
      expect((error as Error).message).toMatch(/createSessionManager: (tokenBudget|compactionThreshold) must be/);
    }
  });

  it('builds a request with context from the project and the agent description', async () => {
    const manager = await open({ agentDescriptions: { dev: { extraInstructions: ['Use tabs.'] } } });
    const sessionId = await draftSession(manager);
    await manager.addMessage(sessionId, { role: 'user', content: 'Add a flag' });
    await manager.addMessage(sessionId, { role: 'assistant', content: 'Added.' });
    const request = await manager.buildRequest(sessionId, 'Now document it');
    expect(request.systemPrompt.startsWith('# Your Role\n\nYou are the Developer agent')).toBe(true);
    expect(request.systemPrompt).toContain('- Use tabs.');
    expect(request.systemPrompt).toContain('# Checkpoint (Work Progress)\n\nNo checkpoint yet');
    expect(
      request.systemPrompt.endsWith('# Recent Conversation\n\n**User**: Add a flag\n\n**Assistant**: Added.'),
    ).toBe(true);
    expect(request.userPrompt).toBe('Now document it');
    expect(request).toMatchObject({
      budget: 100_000,
      threshold: 90_000,
      compactionThreshold: 0.9,
      compacted: false,
      messages: 2,
    });
    expect((await manager.getAgentDescription(sessionId)).instructions.at(-1)).toBe('Use tabs.');
    await manager.setAgentDescription(sessionId, { role: 'You are a careful Go developer.' });
    expect(
      (await manager.buildRequest(sessionId, 'x')).systemPrompt.startsWith(
        '# Your Role\n\nYou are a careful Go developer.',
      ),
    ).toBe(true);
  });
});
