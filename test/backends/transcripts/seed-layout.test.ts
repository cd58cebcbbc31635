import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  parseSeedLayout,
  seedLayoutFileOf,
  sectionsFromStateSnapshot,
  sectionsFromSummaryText,
} from '../../../src/backends/index.js';
import { ConversationBlockSchema } from '../../../src/conversation/index.js';

const DAGENT = join(
  import.meta.dirname,
  '..',
  '..',
  'fixtures',
  'transcripts',
  'seed-layout',
  '.dagent-worktrees',
  'auth',
  '.dagent',
);
const read = (path: string): string => readFileSync(join(DAGENT, path), 'utf8');

describe('parseSeedLayout', () => {
  it("reads seed 003's shapes: session.json, chat.json with per-message metadata, checkpoint, flat context, roleInstructions", () => {
    const id = 'pm-feature-auth';
    const parsed = parseSeedLayout({
      sessionId: id,
      session: read(`sessions/session_${id}.json`),
      chat: read(`sessions/chat_${id}.json`),
      checkpoint: read(`sessions/checkpoint_${id}.json`),
      context: read(`sessions/context_${id}.json`),
      agentDescription: read(`sessions/agent-description_${id}.json`),
    });
    expect(parsed.warnings).toEqual([]);
    expect(parsed.nativeSessionId).toBe(id);
    expect(parsed.session).toEqual({
      agentType: 'pm',
      scopeType: 'feature',
      featureId: 'auth',
      status: 'active',
      createdAt: Date.parse('2026-01-17T10:00:00.000Z'),
      updatedAt: Date.parse('2026-01-17T12:30:00.000Z'),
    });
    expect(parsed.blocks).toEqual([
      {
        type: 'user_message',
        id: 'msg-uuid-1',
        createdAt: Date.parse('2026-01-17T12:25:00.000Z'),
        completedAt: Date.parse('2026-01-17T12:25:00.000Z'),
        content: 'Create a task for auth',
      },
      expect.objectContaining({
        type: 'assistant_text',
        id: 'msg-uuid-2',
        content: "I'll create an authentication task...",
        metadata: { agentType: 'pm', tokens: { input: 500, output: 200 } },
      }),
    ]);
    expect(parsed.usage).toEqual([
      {
        conversationId: 'main',
        metadata: {
          usage: { inputTokens: 500, outputTokens: 200, cacheReadTokens: 0, cacheWriteTokens: 0 },
          turnComplete: true,
        },
      },
    ]);
    expect(parsed.checkpoint).toEqual({
      version: 3,
      createdAt: '2026-01-17T12:00:00.000Z',
      summary: {
        completed: ['Reviewed feature requirements', 'Created initial task breakdown'],
        inProgress: ['Designing authentication flow'],
        pending: ['Implement OAuth integration', 'Add session management'],
        decisions: ['Using JWT for session tokens', 'OAuth provider: GitHub only initially'],
        blockers: [],
      },
      tokens: {},
      messageCount: 40,
      oldestMessageTimestamp: '2026-01-17T10:00:00.000Z',
      newestMessageTimestamp: '2026-01-17T11:55:00.000Z',
    });
    expect(parsed.context?.sections).toMatchObject({
      featureName: 'User Authentication',
      projectStructure: 'src/\n  main/\n  renderer/',
    });
    expect(parsed.context?.sections['recentCommits']).toContain('abc123 - Add auth types');
    expect(parsed.agentDescription).toEqual({
      agentType: 'pm',
      role: 'You are a Project Manager agent...',
      instructions: [],
      allowedTools: [],
      toolInstructions: 'Available tools: CreateTask, UpdateTask...',
      createdAt: '2026-01-17T10:00:00.000Z',
    });
  });

  it("reads seed 002's shapes: chat with sessionId and metadata, completedItems/pendingItems, ralphLoop, nested context, tokens", () => {
    const id = 'dev-task-auth-task-123-in_dev';
    const parsed = parseSeedLayout({
      sessionId: id,
      chat: read(`nodes/task-123/sessions/chat_${id}.json`),
      checkpoint: read(`nodes/task-123/sessions/checkpoint_${id}.json`),
      context: read(`nodes/task-123/sessions/context_${id}.json`),
      agentDescription: read(`nodes/task-123/sessions/agent-description_${id}.json`),
    });
    expect(parsed.blocks.map((block) => [block.id, block.type])).toEqual([
      ['m-1', 'user_message'],
      ['m-2', 'assistant_text'],
      ['m-3', 'user_message'],
    ]);
    expect(parsed.blocks[0]).toMatchObject({ metadata: { tokens: 12 } });
    // A message that is not a chat message is reported and skipped; the rest imports.
    expect(parsed.warnings).toEqual([
      expect.objectContaining({ code: 'INVALID_MESSAGE', message: expect.stringContaining('message 3') }),
    ]);
    expect(parsed.checkpoint).toMatchObject({
      version: 1,
      summary: {
        completed: ['Scaffolded the OAuth module'],
        pending: ['Implement the callback', 'Add tests'],
        decisions: ['Use the state parameter against CSRF'],
      },
      ralphLoop: {
        currentIteration: 2,
        passedChecks: ['build', 'lint'],
        failedChecks: ['test'],
        lastError: 'expected 302, got 500',
      },
      tokens: { checkpoint: 85, lastCompactionInput: 42000, totalSaved: 41000 },
    });
    expect(parsed.context).toMatchObject({ tokens: 640, updatedAt: '2026-01-18T09:00:00.000Z' });
    expect(JSON.parse(parsed.context!.sections['project']!)).toMatchObject({ claudeMd: '# Project rules' });
    expect(parsed.context!.sections).not.toHaveProperty('sessionId');
    expect(parsed.agentDescription).toMatchObject({
      agentType: 'dev',
      instructions: ['Run build, lint and test before finishing', 'Keep commits small'],
      allowedTools: ['Read', 'Edit', 'Bash'],
      tokens: 40,
    });
  });

  it('migrates the old chat.json: a bare list of messages without ids', () => {
    const parsed = parseSeedLayout({ sessionId: 'chat-auth', chat: read('chat.json') });
    expect(parsed.blocks.map((block) => [block.id, block.type, 'content' in block ? block.content : ''])).toEqual([
      ['message-0', 'user_message', 'What is left on auth?'],
      ['message-1', 'assistant_text', 'The OAuth callback and its tests.'],
    ]);
    for (const block of parsed.blocks) expect(ConversationBlockSchema.safeParse(block).success).toBe(true);
    expect(parsed.info.firstUserMessage).toBe('What is left on auth?');
  });

  it('leaves out a file that is not JSON or not of its shape, with a warning naming it, and reads the rest', () => {
    const parsed = parseSeedLayout({
      sessionId: 's1',
      chat: '[{"role":"user","content":"still here"}]',
      checkpoint: '{ not json',
      context: '"a string"',
      agentDescription: '{"instructions": "not a list"}',
    });
    expect(parsed.blocks).toHaveLength(1);
    expect(parsed.checkpoint).toBeUndefined();
    expect(parsed.context).toBeUndefined();
    expect(parsed.agentDescription).toBeUndefined();
    expect(parsed.warnings.map((warning) => warning.file)).toEqual([
      'checkpoint_s1.json',
      'context_s1.json',
      'agent-description_s1.json',
    ]);
  });

  it('carries over no checkpoint when the seed checkpoint is the empty initial one', () => {
    const parsed = parseSeedLayout({
      sessionId: 's1',
      checkpoint: '{"version":0,"summary":{"completedItems":[],"pendingItems":[],"decisions":[],"blockers":[]}}',
    });
    expect(parsed.checkpoint).toBeUndefined();
  });

  it('names its files by kind and session id', () => {
    expect(seedLayoutFileOf('agent-description_pm-feature-auth.json')).toEqual({
      kind: 'agentDescription',
      sessionId: 'pm-feature-auth',
    });
    expect(seedLayoutFileOf('chat_x.json')).toEqual({ kind: 'chat', sessionId: 'x' });
    expect(seedLayoutFileOf('chat.json')).toBeUndefined();
    expect(seedLayoutFileOf('session-2026-11-21T04-40-598981be.jsonl')).toBeUndefined();
  });
});

describe('compaction summaries as checkpoint sections', () => {
  it("sorts Claude Code's compact summary headings into the checkpoint's lists", () => {
    const sections = sectionsFromSummaryText(
      [
        'This session is being continued from a previous conversation that ran out of context.',
        '',
        '1. Primary Request and Intent:',
        '   - Add a --verbose flag to the CLI',
        '',
        '2. Errors and fixes:',
        '   - test/cli.test.ts failed; fixed by adding the flag',
        '',
        '3. Pending Tasks:',
        '   - Add tests for --verbose output',
        '',
        '4. Current Work:',
        '   Wiring --verbose into',
        '   the logger',
      ].join('\n'),
    );
    expect(sections).toEqual({
      completed: ['This session is being continued from a previous conversation that ran out of context.'],
      decisions: ['Add a --verbose flag to the CLI'],
      blockers: ['test/cli.test.ts failed; fixed by adding the flag'],
      pending: ['Add tests for --verbose output'],
      inProgress: ['Wiring --verbose into the logger'],
    });
  });

  it('keeps a summary without headings whole', () => {
    expect(sectionsFromSummaryText('just one line').completed).toEqual(['just one line']);
  });

  it("sorts Gemini's <state_snapshot> plan by its [DONE] / [IN PROGRESS] / [TODO] marks", () => {
    const { sections, goal } = sectionsFromStateSnapshot(
      '<state_snapshot>\n<overall_goal>\n Port the parser.\n</overall_goal>\n<key_knowledge>\n - Tests run with npm test.\n</key_knowledge>\n<current_plan>\n 1. [DONE] Tokenizer.\n 2. [IN PROGRESS] Evaluator.\n 3. [TODO] Cleanup.\n</current_plan>\n</state_snapshot>',
    );
    expect(goal).toBe('Port the parser.');
    expect(sections).toEqual({
      completed: ['Tokenizer.'],
      inProgress: ['Evaluator.'],
      pending: ['Cleanup.'],
      decisions: ['Goal: Port the parser.', 'Tests run with npm test.'],
      blockers: [],
    });
  });
});
