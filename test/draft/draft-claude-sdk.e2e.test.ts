/**
 * The draft flow end to end on the claude-sdk back end: the real Claude Agent SDK 0.3.329 and the
 * Claude Code CLI it starts, against the fake Messages API on 127.0.0.1. A drafted product analyst
 * dispatches a worker through Parley's in-process MCP tools (`mcp__parley__draft_agent`, then
 * `mcp__parley__await_agent`); the worker runs on its own CLI with an output schema, its blocks land
 * in a subagent thread of the analyst's session, and the next turn resumes the analyst's native
 * session. Four CLI starts in all, one test, run alone.
 */
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClaudeSdkBackend } from '../../src/backends/index.js';
import type { SubagentBlock, ToolResultBlock, ToolUseBlock } from '../../src/conversation/index.js';
import {
  createDraftService,
  DraftSessionSchema,
  type DispatchResult,
  type DraftService,
} from '../../src/draft/index.js';
import { createSessionManager, type SessionManager } from '../../src/sessions/index.js';
import { createFileStore, type SessionStore } from '../../src/store/index.js';
import {
  allMessageText,
  lastToolResults,
  lastUserText,
  reply,
  startFakeAnthropicServer,
  text,
  toolUse,
  type FakeAnthropicServer,
} from '../fixtures/fake-anthropic-server.js';
import { Recorder } from './helpers.js';

const MODEL = 'claude-sonnet-4-5';
const WORKER_MARK = 'WORKER-TASK';
const COUNT_SCHEMA = {
  type: 'object',
  properties: { words: { type: 'integer' }, summary: { type: 'string' } },
  required: ['words', 'summary'],
};

describe.sequential('draft flow on the claude-sdk back end (real SDK and CLI, fake API)', () => {
  let server: FakeAnthropicServer;
  let root: string;
  let store: SessionStore;
  let manager: SessionManager;
  let service: DraftService;
  let recorder: Recorder;
  const roles: string[] = [];

  beforeAll(async () => {
    server = await startFakeAnthropicServer();
    root = await mkdtemp(join(tmpdir(), 'parley-draft-claude-'));
    const projectRoot = join(root, 'project');
    const dataDir = join(projectRoot, '.parley');
    await mkdir(projectRoot, { recursive: true });
    // The model: an analyst that dispatches a worker and awaits it, and a worker that answers through StructuredOutput.
    server.setScript((request) => {
      const body = request.body;
      const all = allMessageText(body);
      const tools = (body?.tools ?? []).map((tool) => tool.name);
      if (all.includes(WORKER_MARK)) {
        roles.push('worker');
        if (tools.includes('StructuredOutput')) {
          return reply([toolUse('StructuredOutput', { words: 42, summary: 'The README has 42 words.' })], {
            usage: { input_tokens: 500, output_tokens: 30 },
          });
        }
        return reply('{"words": 42, "summary": "The README has 42 words."}', {
          usage: { input_tokens: 500, output_tokens: 30 },
        });
      }
      roles.push('analyst');
      const usage = { usage: { input_tokens: 1000, output_tokens: 50 } };
      const results = lastToolResults(body);
      const last = results.at(-1);
      if (last && last.content.includes('"conversationId"'))
        return reply([text('The developer counted 42 words.')], usage);
      if (last) {
        // The CLI passes the tool's text and its structured content; the id is in both.
        const agentId = /"agentId"\s*:\s*"([^"]+)"/.exec(last.content)?.[1] ?? 'missing';
        return reply([toolUse('mcp__parley__await_agent', { agentId, timeoutSeconds: 120 })], usage);
      }
      if (lastUserText(body).includes('thank you')) return reply('You are welcome.', usage);
      return reply(
        [
          text('I will ask a developer.'),
          toolUse('mcp__parley__draft_agent', {
            role: 'dev',
            prompt: `${WORKER_MARK}: count the words in README.md`,
            outputSchema: COUNT_SCHEMA,
          }),
        ],
        usage,
      );
    });
    const backend = createClaudeSdkBackend({
      configDir: join(root, 'claude-config'),
      cwd: projectRoot,
      apiKey: 'test-key',
      baseURL: server.url,
      maxRetries: 0,
      inheritEnv: false,
      defaultModel: MODEL,
    });
    store = await createFileStore({ dataDir, onWarning: () => undefined });
    manager = await createSessionManager({ store });
    service = await createDraftService({ manager, projectRoot, dataDir, backendFor: () => backend });
    recorder = new Recorder(service);
  });

  afterAll(async () => {
    await service?.close();
    await manager?.close();
    await store?.close();
    await server?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('a drafted analyst dispatches a worker through the in-process MCP tools, awaits it, and resumes next turn', async () => {
    const [project] = await service.listProjects();
    const task = await service.createTask({ project: project!.name, title: 'Check the README' });
    const { sessionId } = await service.draft({
      channelId: 'tui',
      role: 'product-analyst',
      project: project!.name,
      task: task.slug,
    });

    await service.submitPrompt({ channelId: 'tui', content: 'Please check the README.' });
    await service.settled({ channelId: 'tui' });

    const conversation = await manager.loadConversation(sessionId);
    const main = conversation.blocks;
    const toolUses = main.filter((block): block is ToolUseBlock => block.type === 'tool_use');
    expect(toolUses.map((block) => [block.name, block.status])).toEqual([
      ['mcp__parley__draft_agent', 'success'],
      ['mcp__parley__await_agent', 'success'],
    ]);
    const results = main.filter((block): block is ToolResultBlock => block.type === 'tool_result');
    const { agentId } = JSON.parse(results[0]!.content) as { agentId: string };
    const dispatch = JSON.parse(results[1]!.content) as DispatchResult;
    expect(dispatch).toMatchObject({
      agentId,
      role: 'dev',
      status: 'completed',
      output: { words: 42, summary: 'The README has 42 words.' },
      summary: 'The README has 42 words.',
      attempts: 1,
      conversationId: agentId,
      usage: { inputTokens: 500, outputTokens: 30 },
    });
    expect(dispatch.costUsd).toBeGreaterThan(0);
    expect(main.at(-1)).toMatchObject({ type: 'assistant_text', content: 'The developer counted 42 words.' });

    // The drafted analyst is told its role (the role file's body) on every turn of its native session.
    const analystRequest = server
      .messageRequests()
      .find((request) => !allMessageText(request.body).includes(WORKER_MARK))!;
    expect(JSON.stringify(analystRequest.body?.system)).toContain('You are the product analyst on this project.');

    // The worker's request carries its role's instructions and the answer format (appended to Claude Code's prompt).
    const workerRequest = server
      .messageRequests()
      .find((request) => allMessageText(request.body).includes(WORKER_MARK))!;
    expect(JSON.stringify(workerRequest.body?.system)).toContain('You are a software developer on this project.');
    expect(JSON.stringify(workerRequest.body?.system)).toContain('matching this JSON Schema');

    // The worker's blocks are a subagent thread of the analyst's session, with its status and cost in main.
    const thread = conversation.subagents.find((entry) => entry.id === agentId)!;
    expect(thread.blocks[0]).toMatchObject({
      type: 'user_message',
      content: `${WORKER_MARK}: count the words in README.md`,
    });
    expect(thread.blocks.some((block) => block.type === 'tool_use' && block.name === 'StructuredOutput')).toBe(true);
    const subagent = main.find((block): block is SubagentBlock => block.type === 'subagent')!;
    expect(subagent).toMatchObject({ subagentId: agentId, name: 'dev', status: 'success', costUsd: dispatch.costUsd });

    // Metrics from the back end's real numbers; the worker's cost rolled into the draft.
    const log = await manager.getEvents(sessionId);
    const loggedCost = log.reduce(
      (sum, event) => sum + (event.type === 'metadata_update' ? (event.metadata.costUsd ?? 0) : 0),
      0,
    );
    const status = (await service.getDraftStatus({ channelId: 'tui' })).session!;
    expect(status.cumulativeCostUsd).toBeCloseTo(loggedCost, 10);
    expect(status.cumulativeCostUsd).toBeGreaterThan(dispatch.costUsd);
    expect(status).toMatchObject({
      turnCount: 1,
      contextWindow: 200_000,
      maxOutputTokens: 32_000,
      lastInputTokens: 1000,
      lastOutputTokens: 50,
      contextPct: 0.5,
      backend: 'claude-sdk',
    });
    expect(recorder.of('draft_status').at(-1)).toMatchObject({ turnCount: 1, contextPct: 0.5 });
    expect(recorder.of('channel_message').some((message) => message.event.conversationId === agentId)).toBe(true);

    // Turn 2 resumes the native session: the CLI sends the earlier conversation itself.
    await service.submitPrompt({ channelId: 'tui', content: 'thank you' });
    await service.settled({ channelId: 'tui' });
    const lastRequest = server.messageRequests().at(-1)!;
    expect(allMessageText(lastRequest.body)).toContain('Please check the README.');
    expect((await manager.loadConversation(sessionId)).blocks.at(-1)).toMatchObject({
      type: 'assistant_text',
      content: 'You are welcome.',
    });
    const saved = DraftSessionSchema.parse(JSON.parse(await readFile(join(task.taskDir, 'draft.json'), 'utf8')));
    expect(saved).toMatchObject({ turnCount: 2, continuity: 'native', nativeStarted: true, backend: 'claude-sdk' });
    expect(saved.nativeSessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(roles.filter((role) => role === 'worker')).toHaveLength(1);

    const summary = await service.undraft({ channelId: 'tui' });
    expect(summary).toMatchObject({ sessionId, turns: 2 });
    expect(summary.cost).toBeGreaterThan(status.cumulativeCostUsd);
  }, 180_000);
});
