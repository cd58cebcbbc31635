import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, step, type ScriptedBackend } from '../../src/backends/index.js';
import type { SubagentBlock, ToolResultBlock, UserMessageBlock } from '../../src/conversation/index.js';
import { isLoop, similarity } from '../../src/draft/conversations.js';
import type { DraftService } from '../../src/draft/index.js';
import { closeAll, followConversation, harness, tempProject, writeRole } from './helpers.js';

afterEach(closeAll);

async function draftAnalyst(service: DraftService) {
  const [project] = await service.listProjects();
  const task = await service.createTask({ project: project!.name, title: 'Checkout' });
  return service.draft({ channelId: 'c', role: 'product-analyst', project: project!.name, task: task.slug });
}

/** The tool results of the analyst's turn, parsed, in order. */
async function results(
  h: Awaited<ReturnType<typeof harness>>,
  sessionId: string,
): Promise<Array<{ isError: boolean; data: Record<string, unknown> | string }>> {
  const { blocks } = await h.manager.loadConversation(sessionId);
  return blocks
    .filter((block): block is ToolResultBlock => block.type === 'tool_result')
    .map((block) => ({
      isError: block.isError,
      data: block.isError ? block.content : (JSON.parse(block.content) as Record<string, unknown>),
    }));
}

function devBackend(): ScriptedBackend {
  return createScriptedBackend({
    idPrefix: 'dev',
    defaultTurn: (call) => [
      step.text(`Dev: about "${call.prompt.split('\n').at(-1)}", use a queue.`),
      step.usage({ inputTokens: 10, outputTokens: 5 }),
      step.cost(0.25),
    ],
  });
}

describe('conversations between agents', () => {
  it('an analyst opens a conversation with a dev, exchanges three messages, closes it and answers with the outcome', async () => {
    const analyst = createScriptedBackend({ idPrefix: 'analyst' });
    const dev = devBackend();
    const h = await harness({ backends: { default: analyst, 'dev-backend': dev } });
    await writeRole(
      h.dataDir,
      'dev.md',
      '---\ndescription: Developer\nbackend: dev-backend\n---\nYou implement tasks.\n',
    );
    const ref = followConversation(h.manager, 'dev');
    analyst.enqueue([
      step.tool('open_conversation', { role: 'dev', topic: 'How should checkout handle payment retries?' }),
      step.tool('say', {
        get conversationId() {
          return ref.conversationId;
        },
        message: 'Should retries be synchronous?',
      }),
      step.tool('say', {
        get conversationId() {
          return ref.conversationId;
        },
        message: 'What about idempotency keys?',
      }),
      step.tool('say', {
        get conversationId() {
          return ref.conversationId;
        },
        message: 'And the timeout?',
      }),
      step.tool('close_conversation', {
        get conversationId() {
          return ref.conversationId;
        },
      }),
      step.text('Plan: retries go through a queue, as the dev advised.'),
    ]);
    const drafted = await draftAnalyst(h.service);
    await h.service.submitPrompt({ channelId: 'c', content: 'Plan checkout retries with a developer.' });
    await h.service.settled({ channelId: 'c' });

    const outcomes = await results(h, drafted.sessionId);
    expect(outcomes.map((outcome) => outcome.isError)).toEqual([false, false, false, false, false]);
    const [opened, first, , third, closed] = outcomes.map((outcome) => outcome.data as Record<string, unknown>);
    expect(opened).toMatchObject({ conversationId: ref.conversationId, role: 'dev', maxTurns: 20 });
    expect(first).toMatchObject({
      reply: 'Dev: about "Should retries be synchronous?", use a queue.',
      turn: 1,
      turnsLeft: 19,
    });
    expect(third).toMatchObject({ turn: 3 });
    expect(closed).toMatchObject({
      conversationId: ref.conversationId,
      role: 'dev',
      turns: 3,
      costUsd: 0.75,
      closedBecause: 'closed',
    });

    // The dev has a session of its own, with the topic first and the three messages; closed means archived.
    const devSession = await h.manager.getSession(ref.conversationId);
    expect(devSession).toMatchObject({
      agentType: 'dev',
      status: 'archived',
      scope: { kind: 'draft', parentSessionId: drafted.sessionId },
    });
    expect(dev.calls.map((call) => call.prompt)).toHaveLength(3);
    // The thread in the analyst's session shows both sides, and its block carries the cost up.
    const { blocks } = await h.manager.loadConversation(drafted.sessionId);
    const thread = (await h.manager.getEvents(drafted.sessionId)).filter(
      (event) => event.conversationId === ref.conversationId,
    );
    const said = thread.flatMap((event) =>
      event.type === 'block_complete' && event.block.type === 'user_message'
        ? [(event.block as UserMessageBlock).content]
        : [],
    );
    expect(said).toEqual(['Should retries be synchronous?', 'What about idempotency keys?', 'And the timeout?']);
    expect(thread.some((event) => event.type === 'block_complete' && event.block.type === 'assistant_text')).toBe(true);
    const block = blocks.find(
      (entry): entry is SubagentBlock => entry.type === 'subagent' && entry.subagentId === ref.conversationId,
    );
    expect(block).toMatchObject({ status: 'success', costUsd: 0.75 });
  });

  it('the user steps in: the note shows in the thread at once and reaches both agents with the next message', async () => {
    const analyst = createScriptedBackend({ idPrefix: 'analyst' });
    const dev = devBackend();
    const h = await harness({ backends: { default: analyst, 'dev-backend': dev } });
    await writeRole(
      h.dataDir,
      'dev.md',
      '---\ndescription: Developer\nbackend: dev-backend\n---\nYou implement tasks.\n',
    );
    const ref = { conversationId: '' };
    let opened!: () => void;
    const openedOnce = new Promise<void>((resolve) => (opened = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    h.manager.on('session:event', ({ event }) => {
      if (event.type === 'block_start' && event.block.type === 'subagent') {
        ref.conversationId = event.block.subagentId;
        opened();
      }
    });
    analyst.enqueue([
      step.tool('open_conversation', { role: 'dev', topic: 'Caching' }),
      { type: 'wait', until: gate },
      step.tool('say', {
        get conversationId() {
          return ref.conversationId;
        },
        message: 'Redis or memory?',
      }),
      step.text('ok'),
    ]);
    const drafted = await draftAnalyst(h.service);
    await h.service.submitPrompt({ channelId: 'c', content: 'Discuss caching.' });
    await openedOnce;
    await h.service.sayInConversation({ conversationId: ref.conversationId, message: 'Keep it in memory for now.' });
    release();
    await h.service.settled({ channelId: 'c' });
    expect(dev.calls[0]!.prompt).toContain('[A note from the user to both of you: Keep it in memory for now.]');
    const [, said] = await results(h, drafted.sessionId);
    expect(said!.data).toMatchObject({ userNotes: ['Keep it in memory for now.'] });
    await expect(h.service.sayInConversation({ conversationId: 'nope', message: 'x' })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
  });

  it('the loop guard stops two agents trading the same messages, with a clear reason', async () => {
    const analyst = createScriptedBackend({ idPrefix: 'analyst' });
    const dev = createScriptedBackend({ idPrefix: 'dev', defaultTurn: () => [step.text('I agree, let us do that.')] });
    const h = await harness({ backends: { default: analyst, 'dev-backend': dev } });
    await writeRole(
      h.dataDir,
      'dev.md',
      '---\ndescription: Developer\nbackend: dev-backend\n---\nYou implement tasks.\n',
    );
    const ref = { conversationId: '' };
    h.manager.on('session:event', ({ event }) => {
      if (event.type === 'block_start' && event.block.type === 'subagent') ref.conversationId = event.block.subagentId;
    });
    const again = () =>
      step.tool('say', {
        get conversationId() {
          return ref.conversationId;
        },
        message: 'Shall we do that?',
      });
    analyst.enqueue([
      step.tool('open_conversation', { role: 'dev', topic: 'Loop' }),
      again(),
      again(),
      again(),
      again(),
      step.text('stopped'),
    ]);
    const drafted = await draftAnalyst(h.service);
    await h.service.submitPrompt({ channelId: 'c', content: 'Talk.' });
    await h.service.settled({ channelId: 'c' });
    const outcomes = await results(h, drafted.sessionId);
    expect(outcomes.map((outcome) => outcome.isError)).toEqual([false, false, false, true, true]);
    expect(outcomes[3]!.data).toMatch(/CONVERSATION_LOOP: .*near-identical/);
    expect(outcomes[4]!.data).toMatch(/CONVERSATION_CLOSED/);
    expect(dev.calls).toHaveLength(3);
  });

  it('limits: open conversations per draft and messages per conversation, from the role file', async () => {
    const analyst = createScriptedBackend({ idPrefix: 'analyst' });
    const h = await harness({ backends: { default: analyst, 'dev-backend': devBackend() } });
    await writeRole(
      h.dataDir,
      'dev.md',
      '---\ndescription: Developer\nbackend: dev-backend\n---\nYou implement tasks.\n',
    );
    await writeRole(
      h.dataDir,
      'product-analyst.md',
      '---\ndescription: Analyst\npermissions: [agent-converse]\nmaxOpenConversations: 1\nmaxConversationTurns: 1\n---\nYou plan.\n',
    );
    const ref = { conversationId: '' };
    h.manager.on('session:event', ({ event }) => {
      if (event.type === 'block_start' && event.block.type === 'subagent' && ref.conversationId === '')
        ref.conversationId = event.block.subagentId;
    });
    const sayIt = () =>
      step.tool('say', {
        get conversationId() {
          return ref.conversationId;
        },
        message: 'Hi',
      });
    analyst.enqueue([
      step.tool('open_conversation', { role: 'dev', topic: 'A' }),
      step.tool('open_conversation', { role: 'dev', topic: 'B' }),
      sayIt(),
      sayIt(),
      step.text('done'),
    ]);
    const drafted = await draftAnalyst(h.service);
    await h.service.submitPrompt({ channelId: 'c', content: 'Go.' });
    await h.service.settled({ channelId: 'c' });
    const outcomes = await results(h, drafted.sessionId);
    expect(outcomes.map((outcome) => outcome.isError)).toEqual([false, true, false, true]);
    expect(outcomes[1]!.data).toMatch(/CONVERSATION_LIMIT/);
    expect(outcomes[3]!.data).toMatch(/CONVERSATION_TURN_LIMIT/);
  });

  it('undraft closes the draft’s conversations; a restarted server goes on with an open one', async () => {
    const project = await tempProject();
    try {
      const analyst = createScriptedBackend({ idPrefix: 'analyst' });
      const first = await harness({
        store: 'file',
        project,
        backends: { default: analyst, 'dev-backend': devBackend() },
      });
      await writeRole(
        first.dataDir,
        'dev.md',
        '---\ndescription: Developer\nbackend: dev-backend\n---\nYou implement tasks.\n',
      );
      analyst.enqueue([step.tool('open_conversation', { role: 'dev', topic: 'Restart' }), step.text('opened')]);
      const drafted = await draftAnalyst(first.service);
      await first.service.submitPrompt({ channelId: 'c', content: 'Open one.' });
      await first.service.settled({ channelId: 'c' });
      const [opened] = await results(first, drafted.sessionId);
      const conversationId = (opened!.data as { conversationId: string }).conversationId;
      await closeAll();

      // A new server over the same data folder: the conversation is still open and takes the next message.
      const analystAgain = createScriptedBackend({ idPrefix: 'analyst2' });
      const second = await harness({
        store: 'file',
        project,
        backends: { default: analystAgain, scripted: analystAgain, 'dev-backend': devBackend() },
      });
      analystAgain.enqueue([step.tool('say', { conversationId, message: 'Still there?' }), step.text('yes')]);
      await second.service.submitPrompt({ channelId: 'c', content: 'Continue.' });
      await second.service.settled({ channelId: 'c' });
      const after = await results(second, drafted.sessionId);
      expect(after.at(-1)).toMatchObject({ isError: false, data: { conversationId, turn: 1 } });
      await second.service.undraft({ channelId: 'c' });
      expect((await second.manager.getSession(conversationId)).status).toBe('archived');
    } finally {
      await closeAll();
      await project.cleanup();
    }
  });
});

describe('the loop guard’s measure', () => {
  it('counts word-set overlap, and a loop only after three near-identical exchanges', () => {
    expect(similarity('Shall we do that?', 'shall we DO that')).toBe(1);
    expect(similarity('use a queue', 'use a cache')).toBeLessThan(0.9);
    const same = { said: 'Shall we?', reply: 'Yes.' };
    expect(isLoop([same, same])).toBe(false);
    expect(isLoop([same, same, same])).toBe(true);
    expect(isLoop([same, { said: 'Something new', reply: 'Yes.' }, same])).toBe(false);
  });
});
