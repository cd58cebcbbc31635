/**
 * A claude-sdk draft rewound two turns goes on natively from the point: the real Claude Agent SDK
 * 0.3.329 and the Claude Code CLI it starts, against the fake Messages API on 127.0.0.1. Parley
 * writes the active branch as a new Claude Code transcript and the SDK resumes it, so the request
 * after the rewind holds turn 1 and the new question, and nothing of the two turns left behind.
 * Five CLI starts, one test, run alone.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClaudeSdkBackend } from '../../src/backends/index.js';
import type { AssistantTextBlock, SystemBlock } from '../../src/conversation/index.js';
import { createDraftService, type DraftService } from '../../src/draft/index.js';
import { createSessionManager, type SessionManager } from '../../src/sessions/index.js';
import { createFileStore, type SessionStore } from '../../src/store/index.js';
import {
  allMessageText,
  lastUserText,
  reply,
  startFakeAnthropicServer,
  type FakeAnthropicServer,
} from '../fixtures/fake-anthropic-server.js';

describe.sequential('a claude-sdk draft rewound (real SDK and CLI, fake API)', () => {
  let server: FakeAnthropicServer;
  let root: string;
  let store: SessionStore;
  let manager: SessionManager;
  let service: DraftService;

  beforeAll(async () => {
    server = await startFakeAnthropicServer();
    root = await mkdtemp(join(tmpdir(), 'parley-rewind-claude-'));
    const projectRoot = join(root, 'project');
    const dataDir = join(projectRoot, '.parley');
    await mkdir(projectRoot, { recursive: true });
    // Each answer names the question it answers, so the requests show which turns the model saw.
    // (The CLI puts its own reminders into the user turn, so the question is picked out of it.)
    server.setScript((request) => {
      const question = [...lastUserText(request.body).matchAll(/Question [\w ,]+\?/g)].at(-1)?.[0] ?? 'nothing';
      return reply(`Answer to "${question}".`, { usage: { input_tokens: 800, output_tokens: 20 } });
    });
    const backend = createClaudeSdkBackend({
      configDir: join(root, 'claude-config'),
      cwd: projectRoot,
      apiKey: 'test-key',
      baseURL: server.url,
      maxRetries: 0,
      inheritEnv: false,
      defaultModel: 'claude-sonnet-4-5',
    });
    store = await createFileStore({ dataDir, onWarning: () => undefined });
    manager = await createSessionManager({ store });
    service = await createDraftService({ manager, projectRoot, dataDir, backendFor: () => backend });
  });

  afterAll(async () => {
    await service?.close();
    await manager?.close();
    await store?.close();
    await server?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('rewound two turns, the next turn resumes a native session of turn 1 and holds nothing after it', async () => {
    const [project] = await service.listProjects();
    const task = await service.createTask({ project: project!.name, title: 'Rewind on claude-sdk' });
    const { sessionId } = await service.draft({
      channelId: 'cli',
      role: 'dev',
      project: project!.name,
      task: task.slug,
    });
    for (const question of ['Question one?', 'Question two?', 'Question three?']) {
      await service.submitPrompt({ channelId: 'cli', content: question });
      await service.settled({ channelId: 'cli' });
    }
    const before = await manager.getSession(sessionId);
    expect(before.native?.backend).toBe('claude-sdk');
    const threeTurns = server.messageRequests().at(-1)!;
    expect(allMessageText(threeTurns.body)).toContain('Question two?');

    const blocks = (await manager.loadConversation(sessionId)).blocks;
    const firstAnswer = blocks.find(
      (block): block is AssistantTextBlock =>
        block.type === 'assistant_text' && block.content.includes('Question one?'),
    )!;
    const rewound = await manager.rewind(sessionId, { to: firstAnswer.id });
    expect(rewound.conversation).toBe(true);
    expect(rewound.session.native).toBeUndefined();

    await service.submitPrompt({ channelId: 'cli', content: 'Question four, after the rewind?' });
    await service.settled({ channelId: 'cli' });

    // The SDK resumed a transcript Parley wrote of the active branch: turn 1, then the new question.
    const after = server.messageRequests().at(-1)!;
    const seen = allMessageText(after.body);
    expect(seen).toContain('Question one?');
    expect(seen).toContain('Answer to "Question one?".');
    expect(seen).toContain('Question four, after the rewind?');
    expect(seen).not.toContain('Question two?');
    expect(seen).not.toContain('Question three?');
    // Native, not managed: the history came as the conversation's own messages, not a system prompt.
    expect(JSON.stringify(after.body?.system)).not.toContain('Question one?');
    const session = await manager.getSession(sessionId);
    expect(session.native?.backend).toBe('claude-sdk');
    expect(session.native?.nativeSessionId).not.toBe(before.native?.nativeSessionId);

    const shown = (await manager.loadConversation(sessionId)).blocks;
    const notices = shown.filter((block): block is SystemBlock => block.type === 'system');
    expect(notices.some((block) => block.content.includes('continues natively on claude-sdk'))).toBe(true);
    expect(notices.some((block) => block.content.includes('could not resume'))).toBe(false);
    expect(shown.at(-1)).toMatchObject({
      type: 'assistant_text',
      content: 'Answer to "Question four, after the rewind?".',
    });
    // Nothing was deleted: the branch that was left is still there.
    const branches = await manager.listBranches(sessionId);
    expect(branches.length).toBe(2);
  });
});
