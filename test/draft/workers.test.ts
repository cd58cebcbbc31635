import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, step, type ScriptedBackend } from '../../src/backends/index.js';
import type { ConversationBlock, SubagentBlock, ToolResultBlock } from '../../src/conversation/index.js';
import type { DispatchResult, DraftService } from '../../src/draft/index.js';
import { closeAll, gate, harness, until, writeRole } from './helpers.js';

afterEach(closeAll);

/** Built-in dev and qa, each on its own scripted back end so their scripts stay apart. */
async function workerRoles(dataDir: string): Promise<void> {
  await writeRole(dataDir, 'dev.md', '---\ndescription: Developer\nbackend: dev-backend\n---\nYou implement tasks.\n');
  await writeRole(dataDir, 'qa.md', '---\ndescription: QA reviewer\nbackend: qa-backend\n---\nYou test changes.\n');
}

async function draftAnalyst(service: DraftService, channelId = 'c') {
  const [project] = await service.listProjects();
  const task = await service.createTask({ project: project!.name, title: 'Login page' });
  return service.draft({ channelId, role: 'product-analyst', project: project!.name, task: task.slug });
}

/** Tool inputs filled with the real agent ids as the workers are dispatched. */
function agentIds(service: DraftService): Record<string, { agentId: string; timeoutSeconds?: number }> {
  const ids: Record<string, { agentId: string; timeoutSeconds?: number }> = {
    dev: { agentId: '' },
    qa: { agentId: '' },
  };
  service.on('agent_status', ({ agent }) => {
    if (agent.kind === 'worker' && ids[agent.role]) ids[agent.role]!.agentId = agent.agentId;
  });
  return ids;
}

function toolResults(blocks: readonly ConversationBlock[]): ToolResultBlock[] {
  return blocks.filter((block): block is ToolResultBlock => block.type === 'tool_result');
}

function backends(): { analyst: ScriptedBackend; dev: ScriptedBackend; qa: ScriptedBackend } {
  return {
    analyst: createScriptedBackend({ idPrefix: 'analyst' }),
    dev: createScriptedBackend({ idPrefix: 'dev' }),
    qa: createScriptedBackend({ idPrefix: 'qa' }),
  };
}

const FILES_SCHEMA = {
  type: 'object',
  properties: { filesChanged: { type: 'array', items: { type: 'string' } }, summary: { type: 'string' } },
  required: ['filesChanged', 'summary'],
};

describe('worker agents', () => {
  it('a drafted analyst drafts two workers and awaits them: threads, structured output, cost rolled up', async () => {
    const { analyst, dev, qa } = backends();
    const h = await harness({ backends: { default: analyst, 'dev-backend': dev, 'qa-backend': qa } });
    await workerRoles(h.dataDir);
    const ids = agentIds(h.service);
    analyst.enqueue([
      step.text('I will ask a developer and a QA reviewer.'),
      step.tool('draft_agent', { role: 'dev', prompt: 'Implement the login page.', outputSchema: FILES_SCHEMA }),
      step.tool('draft_agent', { role: 'qa', prompt: 'Test the login page.' }),
      step.tool('await_agent', ids.dev),
      step.tool('await_agent', ids.qa),
      step.text('Both are done: login added, no defects.'),
      step.usage({ inputTokens: 1000, outputTokens: 40 }),
      step.cost(0.01),
    ]);
    dev.enqueue([
      step.text('Done.\n```json\n{"filesChanged":["src/login.ts"],"summary":"Added the login page"}\n```'),
      step.usage({ inputTokens: 200, outputTokens: 30 }),
      step.cost(0.02),
    ]);
    qa.enqueue([
      step.thinking('Trying wrong passwords'),
      step.text('No defects found.'),
      step.usage({ inputTokens: 150, outputTokens: 10 }),
      step.cost(0.03),
    ]);

    const drafted = await draftAnalyst(h.service);
    await h.service.submitPrompt({ channelId: 'c', content: 'Build a login page and have it tested.' });
    await h.service.settled({ channelId: 'c' });

    // The analyst got every tool its permissions grant; workers get no agent tools.
    expect(analyst.calls[0]!.tools!.map((tool) => tool.name)).toEqual([
      'list_tasks',
      'list_roles',
      'list_projects',
      'create_project',
      'create_task',
      'draft_agent',
      'await_agent',
      'kill_agent',
      'list_agents',
      'open_conversation',
      'say',
      'close_conversation',
      'read_file',
      'list_files',
      'glob',
      'grep',
    ]);
    expect(dev.calls[0]!.tools!.map((tool) => tool.name)).toEqual(['list_tasks', 'list_roles']);
    // Workers run on the autonomous path: fresh session, role instructions, the output schema.
    expect(dev.calls[0]).toMatchObject({
      prompt: 'Implement the login page.',
      isNewSession: true,
      outputSchema: FILES_SCHEMA,
    });
    expect(dev.calls[0]!.sessionId).not.toBe(drafted.sessionId);
    expect(dev.calls[0]!.systemPrompt).toContain('You implement tasks.');
    expect(dev.calls[0]!.systemPrompt).toContain('"filesChanged"');

    const conversation = await h.manager.loadConversation(drafted.sessionId);
    const results = toolResults(conversation.blocks);
    expect(results).toHaveLength(4);
    expect(results.every((result) => !result.isError)).toBe(true);
    const devResult = results[2]!.output as DispatchResult;
    const qaResult = results[3]!.output as DispatchResult;
    expect(devResult).toMatchObject({
      agentId: ids.dev!.agentId,
      role: 'dev',
      status: 'completed',
      timedOut: false,
      output: { filesChanged: ['src/login.ts'], summary: 'Added the login page' },
      summary: 'Added the login page',
      usage: { inputTokens: 200, outputTokens: 30 },
      costUsd: 0.02,
      attempts: 1,
      sessionId: drafted.sessionId,
      conversationId: ids.dev!.agentId,
    });
    expect(devResult.durationMs).toBeGreaterThanOrEqual(0);
    expect(qaResult).toMatchObject({ role: 'qa', status: 'completed', summary: 'No defects found.', costUsd: 0.03 });
    expect(qaResult.output).toBeUndefined();

    // Each worker's blocks are a subagent thread of the drafting conversation.
    const threads = new Map(conversation.subagents.map((thread) => [thread.id, thread.blocks]));
    expect(threads.get(ids.dev!.agentId)!.map((block) => block.type)).toEqual(['user_message', 'assistant_text']);
    expect(threads.get(ids.qa!.agentId)!.map((block) => block.type)).toEqual([
      'user_message',
      'thinking',
      'assistant_text',
    ]);
    const subagents = conversation.blocks.filter((block): block is SubagentBlock => block.type === 'subagent');
    expect(subagents.map((block) => [block.subagentId, block.name, block.status, block.costUsd])).toEqual([
      [ids.dev!.agentId, 'dev', 'success', 0.02],
      [ids.qa!.agentId, 'qa', 'success', 0.03],
    ]);

    // Their cost rolls up into the draft; turn numbers and occupancy stay the analyst's.
    const status = (await h.service.getDraftStatus({ channelId: 'c' })).session!;
    expect(status.cumulativeCostUsd).toBeCloseTo(0.06, 10);
    expect(status).toMatchObject({ turnCount: 1, lastInputTokens: 1000, lastOutputTokens: 40 });
    expect(h.recorder.of('draft_status').at(-1)!.costUsd).toBeCloseTo(0.06, 10);

    // Worker blocks reached the channel live, and every status change was announced.
    const channelThreads = new Set(h.recorder.of('channel_message').map((message) => message.event.conversationId));
    expect(channelThreads).toEqual(new Set(['main', ids.dev!.agentId, ids.qa!.agentId]));
    const devStatuses = h.recorder
      .of('agent_status')
      .filter((notice) => notice.agent.agentId === ids.dev!.agentId)
      .map((notice) => notice.agent.status);
    expect(devStatuses).toEqual(['queued', 'running', 'completed']);
    expect(await h.service.listAgents({ channelId: 'c' })).toEqual([
      expect.objectContaining({ kind: 'draft', agentId: drafted.sessionId }),
      expect.objectContaining({
        kind: 'worker',
        role: 'dev',
        status: 'completed',
        parentSessionId: drafted.sessionId,
        costUsd: 0.02,
      }),
      expect.objectContaining({ kind: 'worker', role: 'qa', status: 'completed', costUsd: 0.03 }),
    ]);
  });

  it('permissions gate the tools: without agent-draft the model cannot draft workers', async () => {
    const backend = createScriptedBackend({
      turns: [[step.tool('draft_agent', { role: 'qa', prompt: 'x' }), step.tool('list_roles', {})]],
    });
    const h = await harness({ backends: { default: backend } });
    await writeRole(h.dataDir, 'lister.md', '---\npermissions: [projects-list]\n---\nLists projects.\n');
    const [project] = await h.service.listProjects();
    const task = await h.service.createTask({ project: project!.name, title: 'T' });
    const drafted = await h.service.draft({ channelId: 'c', role: 'dev', project: project!.name, task: task.slug });
    await h.service.submitPrompt({ channelId: 'c', content: 'try' });
    await h.service.settled({ channelId: 'c' });
    const results = toolResults((await h.manager.loadConversation(drafted.sessionId)).blocks);
    expect(results[0]).toMatchObject({ isError: true });
    expect(results[0]!.content).toContain('not available');
    expect(results[1]!.isError).toBe(false);
    expect(h.recorder.of('agent_status').filter((notice) => notice.agent.kind === 'worker')).toEqual([]);

    await h.service.undraft({ channelId: 'c' });
    await h.service.draft({ channelId: 'c', role: 'lister', project: project!.name, task: task.slug });
    await h.service.submitPrompt({ channelId: 'c', content: 'again' });
    await h.service.settled({ channelId: 'c' });
    expect(backend.calls[1]!.tools!.map((tool) => tool.name)).toEqual(['list_tasks', 'list_roles', 'list_projects']);
  });

  it('the worker cap queues workers beyond it, first in first out', async () => {
    const { analyst, dev, qa } = backends();
    const h = await harness({
      backends: { default: analyst, 'dev-backend': dev, 'qa-backend': qa },
      maxConcurrentWorkers: 1,
    });
    await workerRoles(h.dataDir);
    const ids = agentIds(h.service);
    const devGate = gate();
    const analystGate = gate();
    analyst.enqueue([
      step.tool('draft_agent', { role: 'dev', prompt: 'slow work' }),
      step.tool('draft_agent', { role: 'qa', prompt: 'quick check' }),
      step.wait(analystGate.promise),
      step.tool('await_agent', ids.dev),
      step.tool('await_agent', ids.qa),
    ]);
    dev.enqueue([step.wait(devGate.promise), step.text('dev done'), step.cost(0.5)]);
    qa.enqueue([step.text('qa done')]);
    await draftAnalyst(h.service);
    await h.service.submitPrompt({ channelId: 'c', content: 'go' });

    await until(() => ids.qa!.agentId !== '', 'the qa worker to be dispatched');
    const agents = await h.service.listAgents({ channelId: 'c' });
    expect(agents.find((agent) => agent.role === 'dev')!.status).toBe('running');
    expect(agents.find((agent) => agent.role === 'qa')!.status).toBe('queued');
    expect(qa.calls).toHaveLength(0);
    expect((await h.service.getDraftStatus({ channelId: 'c' })).session!.activeAgents).toBe(2);

    devGate.open();
    analystGate.open();
    await h.service.settled({ channelId: 'c' });
    const order = h.recorder
      .of('agent_status')
      .filter((notice) => notice.agent.kind === 'worker')
      .map((notice) => `${notice.agent.role}:${notice.agent.status}`);
    expect(order).toEqual(['dev:queued', 'dev:running', 'qa:queued', 'dev:completed', 'qa:running', 'qa:completed']);
  });

  it('an answer that does not match the schema gets one repair attempt', async () => {
    const { analyst, dev, qa } = backends();
    const h = await harness({ backends: { default: analyst, 'dev-backend': dev, 'qa-backend': qa } });
    await workerRoles(h.dataDir);
    const ids = agentIds(h.service);
    analyst.enqueue([
      step.tool('draft_agent', { role: 'dev', prompt: 'fix it', outputSchema: FILES_SCHEMA }),
      step.tool('await_agent', ids.dev),
      step.tool('draft_agent', {
        role: 'qa',
        prompt: 'count',
        outputSchema: { type: 'object', properties: { count: { type: 'integer' } }, required: ['count'] },
      }),
      step.tool('await_agent', ids.qa),
    ]);
    dev.enqueue(
      [step.text('I fixed it in two files.'), step.cost(0.01)],
      [step.text('{"filesChanged":["a.ts","b.ts"],"summary":"fixed"}'), step.cost(0.01)],
    );
    qa.enqueue([step.text('{"count":"many"}')], [step.text('still not a number')]);
    const drafted = await draftAnalyst(h.service);
    await h.service.submitPrompt({ channelId: 'c', content: 'go' });
    await h.service.settled({ channelId: 'c' });

    const results = toolResults((await h.manager.loadConversation(drafted.sessionId)).blocks);
    expect(results[1]!.output).toMatchObject({
      status: 'completed',
      attempts: 2,
      output: { filesChanged: ['a.ts', 'b.ts'], summary: 'fixed' },
      costUsd: 0.02,
    });
    expect(dev.calls[1]!.prompt).toContain('did not match the required output format');
    expect(dev.calls[1]!.prompt).toContain('I fixed it in two files.');
    expect(results[3]!.output).toMatchObject({ status: 'failed', attempts: 2, error: { code: 'INVALID_OUTPUT' } });
    const conversation = await h.manager.loadConversation(drafted.sessionId);
    const devThread = conversation.subagents.find((thread) => thread.id === ids.dev!.agentId)!;
    expect(devThread.blocks.filter((block) => block.type === 'user_message')).toHaveLength(2);
    expect(
      conversation.blocks
        .filter((block): block is SubagentBlock => block.type === 'subagent')
        .map((block) => block.status),
    ).toEqual(['success', 'error']);
  });

  it('kill_agent stops a worker, keeps its partial output, and await_agent reports it killed; a timed-out await says so', async () => {
    const { analyst, dev, qa } = backends();
    const h = await harness({ backends: { default: analyst, 'dev-backend': dev, 'qa-backend': qa } });
    await workerRoles(h.dataDir);
    const ids = agentIds(h.service);
    const never = gate();
    analyst.enqueue([
      step.tool('draft_agent', { role: 'dev', prompt: 'forever' }),
      step.tool('await_agent', {
        get agentId() {
          return ids.dev!.agentId;
        },
        timeoutSeconds: 0.01,
      }),
      step.tool('kill_agent', ids.dev),
      step.tool('await_agent', ids.dev),
      step.tool('kill_agent', ids.dev),
      step.tool('await_agent', { agentId: 'nobody-1234' }),
    ]);
    dev.enqueue([step.text('started'), step.wait(never.promise), step.text('never')]);
    const drafted = await draftAnalyst(h.service);
    await h.service.submitPrompt({ channelId: 'c', content: 'go' });
    await h.service.settled({ channelId: 'c' });

    const results = toolResults((await h.manager.loadConversation(drafted.sessionId)).blocks);
    expect(results[1]!.output).toMatchObject({ status: 'running', timedOut: true });
    expect(results[2]!.output).toEqual({ killed: true });
    expect(results[3]!.output).toMatchObject({ status: 'killed', timedOut: false, summary: 'started' });
    expect(results[4]!.output).toEqual({ killed: false });
    expect(results[5]).toMatchObject({ isError: true });
    expect(results[5]!.content).toContain('NOT_FOUND');
    const conversation = await h.manager.loadConversation(drafted.sessionId);
    const thread = conversation.subagents.find((entry) => entry.id === ids.dev!.agentId)!;
    expect(thread.blocks.map((block) => (block.type === 'system' ? `system:${block.subtype}` : block.type))).toEqual([
      'user_message',
      'assistant_text',
      'system:aborted',
    ]);
    expect(conversation.blocks.find((block) => block.type === 'subagent')).toMatchObject({ status: 'error' });
    never.open();
  });

  it('a worker still running when the next turn starts is not marked interrupted, and undraft kills the rest', async () => {
    const { analyst, dev, qa } = backends();
    const h = await harness({ backends: { default: analyst, 'dev-backend': dev, 'qa-backend': qa } });
    await workerRoles(h.dataDir);
    const ids = agentIds(h.service);
    const devGate = gate();
    const never = gate();
    analyst.enqueue(
      [step.tool('draft_agent', { role: 'dev', prompt: 'background work' })],
      [step.text('while dev works')],
      [step.tool('draft_agent', { role: 'qa', prompt: 'stuck' })],
    );
    dev.enqueue([step.text('working'), step.wait(devGate.promise), step.text('dev finished'), step.cost(0.2)]);
    qa.enqueue([step.wait(never.promise)]);
    const drafted = await draftAnalyst(h.service);
    for (const content of ['start dev', 'chat meanwhile']) {
      await h.service.submitPrompt({ channelId: 'c', content });
      await h.service.settled({ channelId: 'c' });
    }
    devGate.open();
    await until(
      () =>
        h.recorder
          .of('agent_status')
          .some((notice) => notice.agent.role === 'dev' && notice.agent.status === 'completed'),
      'dev to complete',
    );
    // The worker's cost reaches the draft between turns too.
    await until(() => (h.recorder.of('draft_status').at(-1)?.costUsd ?? 0) > 0.19, 'the rolled-up cost to be pushed');
    let conversation = await h.manager.loadConversation(drafted.sessionId);
    expect(conversation.blocks.some((block) => block.type === 'system' && block.subtype === 'interrupted')).toBe(false);
    expect(conversation.blocks.find((block) => block.type === 'subagent')).toMatchObject({
      status: 'success',
      output: 'dev finished',
    });

    await h.service.submitPrompt({ channelId: 'c', content: 'start qa' });
    await h.service.settled({ channelId: 'c' });
    await until(() => ids.qa!.agentId !== '' && h.service !== undefined);
    const summary = await h.service.undraft({ channelId: 'c' });
    expect(summary.cost).toBeCloseTo(0.2, 10);
    conversation = await h.manager.loadConversation(drafted.sessionId);
    const qaBlock = conversation.blocks
      .filter((block): block is SubagentBlock => block.type === 'subagent')
      .find((block) => block.name === 'qa')!;
    expect(qaBlock.status).toBe('error');
    expect(
      h.recorder
        .of('agent_status')
        .filter((notice) => notice.agent.role === 'qa')
        .map((notice) => notice.agent.status)
        .at(-1),
    ).toBe('killed');
    never.open();
  });

  it('submit_prompt without a draft takes the autonomous path and answers with the structured result', async () => {
    const dev = createScriptedBackend({ idPrefix: 'dev' });
    const h = await harness({ backends: { 'dev-backend': dev } });
    await workerRoles(h.dataDir);
    dev.enqueue([
      step.text('{"status":"done","summary":"Renamed the function","details":"utils.ts"}'),
      step.usage({ inputTokens: 80, outputTokens: 12 }),
      step.cost(0.004),
    ]);
    const answer = await h.service.submitPrompt({ channelId: 'solo', content: 'Rename foo to bar.', role: 'dev' });
    expect(answer.mode).toBe('dispatch');
    if (answer.mode !== 'dispatch') return;
    expect(answer.result).toMatchObject({
      role: 'dev',
      status: 'completed',
      output: { status: 'done', summary: 'Renamed the function', details: 'utils.ts' },
      summary: 'Renamed the function',
      usage: { inputTokens: 80, outputTokens: 12 },
      costUsd: 0.004,
      sessionId: answer.sessionId,
      conversationId: 'main',
    });
    expect(dev.calls[0]).toMatchObject({ prompt: 'Rename foo to bar.', isNewSession: true });
    // The dispatch is a session of its own, streamed to the channel as it ran.
    const session = await h.manager.getSession(answer.sessionId);
    expect(session.scope).toEqual({ kind: 'workflow', harness: 'dispatch', agent: 'dev' });
    const conversation = await h.manager.loadConversation(answer.sessionId);
    expect(conversation.blocks.map((block) => block.type)).toEqual(['user_message', 'assistant_text']);
    expect(conversation.metrics.costUsd).toBe(0.004);
    expect(h.recorder.of('channel_message').filter((message) => message.sessionId === answer.sessionId).length).toBe(
      (await h.manager.getEvents(answer.sessionId)).length,
    );

    dev.enqueue([step.text('not json')], [step.text('still not json')]);
    const failed = await h.service.submitPrompt({ channelId: 'solo', content: 'again', role: 'dev' });
    expect(failed).toMatchObject({
      mode: 'dispatch',
      result: { status: 'failed', attempts: 2, error: { code: 'INVALID_OUTPUT' } },
    });
    // An unknown role or task is refused before anything runs.
    await expect(h.service.submitPrompt({ channelId: 'solo', content: 'x', role: 'nobody' })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    await expect(
      h.service.submitPrompt({ channelId: 'solo', content: 'x', role: 'dev', taskSlug: 'missing' }),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('the tools are also a real MCP server: list, draft and await through an MCP client', async () => {
    const { analyst, dev, qa } = backends();
    const h = await harness({ backends: { default: analyst, 'dev-backend': dev, 'qa-backend': qa } });
    await workerRoles(h.dataDir);
    dev.enqueue([step.text('{"filesChanged":[],"summary":"nothing to change"}')]);
    await draftAnalyst(h.service);
    const server = await h.service.createMcpServer({ channelId: 'c' });
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'test', version: '1.0.0' });
    await Promise.all([server.connect(serverTransport), client.connect(clientTransport)]);
    try {
      const listed = await client.listTools();
      expect(listed.tools.map((tool) => tool.name).sort()).toEqual([
        'await_agent',
        'close_conversation',
        'create_project',
        'create_task',
        'draft_agent',
        'glob',
        'grep',
        'kill_agent',
        'list_agents',
        'list_files',
        'list_projects',
        'list_roles',
        'list_tasks',
        'open_conversation',
        'read_file',
        'say',
      ]);
      expect(listed.tools.find((tool) => tool.name === 'draft_agent')!.inputSchema).toMatchObject({
        type: 'object',
        required: ['role', 'prompt'],
      });
      const drafted = await client.callTool({
        name: 'draft_agent',
        arguments: { role: 'dev', prompt: 'check', outputSchema: FILES_SCHEMA },
      });
      const { agentId } = JSON.parse((drafted.content as Array<{ text: string }>)[0]!.text) as { agentId: string };
      const awaited = await client.callTool({ name: 'await_agent', arguments: { agentId } });
      expect(JSON.parse((awaited.content as Array<{ text: string }>)[0]!.text)).toMatchObject({
        status: 'completed',
        output: { summary: 'nothing to change' },
      });
      const bad = await client.callTool({ name: 'draft_agent', arguments: { role: 'dev' } });
      expect(bad.isError).toBe(true);
    } finally {
      await client.close();
      await server.close();
    }
    await expect(h.service.createMcpServer({ channelId: 'nobody' })).rejects.toMatchObject({ code: 'NO_ACTIVE_DRAFT' });
  });
});
