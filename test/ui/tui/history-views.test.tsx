import './terminal-env.js';
import { Box } from 'ink';
import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';
import { parseClaudeCodeTranscript } from '../../../src/backends/index.js';
import type { ConversationBlock, StreamEvent, ToolUseBlock } from '../../../src/conversation/index.js';
import type { DraftStatus } from '../../../src/protocol/index.js';
import { HistoryItemView } from '../../../src/ui/tui/components/block-view.js';
import { initialViewState, reduceView, type HistoryItem } from '../../../src/ui/tui/index.js';
import { plain } from './app-rig.js';
import { SAMPLE_ANSWER } from './render/sample-answer.js';

const at = Date.parse('2026-11-21T07:00:00Z');
const GREEN = '\u001b[32m';
const RED = '\u001b[31m';

function show(items: readonly HistoryItem[], width = 100): { raw: string; text: string } {
  const { lastFrame, unmount } = render(
    <Box flexDirection="column">
      {items.map((item) => (
        <HistoryItemView key={item.key} item={item} width={width} />
      ))}
    </Box>,
  );
  const raw = lastFrame() ?? '';
  unmount();
  return { raw, text: plain(raw) };
}

const item = (block: ConversationBlock, extra: Partial<HistoryItem & { kind: 'block' }> = {}): HistoryItem => ({
  kind: 'block',
  key: block.id,
  block,
  expanded: false,
  ...extra,
});
const toolUse = (name: string, input: unknown): ToolUseBlock => ({
  id: `use-${name}`,
  type: 'tool_use',
  toolUseId: `call-${name}`,
  name,
  input,
  status: 'success',
  createdAt: at,
  completedAt: at,
});
const result = (name: string, content: string, isError = false, output?: unknown): ConversationBlock => ({
  id: `result-${name}`,
  type: 'tool_result',
  toolUseId: `call-${name}`,
  content,
  isError,
  createdAt: at,
  completedAt: at,
  ...(output !== undefined ? { output } : {}),
});

/** What a reader must never see from Markdown: its markers. */
function expectNoMarkers(text: string): void {
  expect(text).not.toContain('**');
  expect(text).not.toContain('```');
  expect(text).not.toMatch(/^\s*#+ /m);
  expect(text).not.toMatch(/^\s*\|/m);
}

describe('the history, as the terminal prints it', () => {
  it('shows an answer as Markdown: headings, lists, a box-drawn table and highlighted code, no markers', () => {
    const { raw, text } = show([
      item({ id: 'a', type: 'assistant_text', content: SAMPLE_ANSWER, createdAt: at, completedAt: at }),
    ]);
    expectNoMarkers(text);
    expect(text).toContain('Login fix');
    expect(text).toContain('• auth.ts: the cookie is set with SameSite=Lax');
    expect(text).toContain('☑ fix the cookie');
    expect(text).toMatch(/┌─+┬─+┬─+┐/);
    expect(text).toMatch(/│ src\/auth\.ts +│ +12 │ the cookie flags +│/);
    expect(text).toContain('  export function cookie(name: string): string {');
    expect(raw).toMatch(/\u001b\[34mexport/);
  });

  it("shows the user's message as Markdown after the prompt mark", () => {
    const { text } = show([
      item({ id: 'u', type: 'user_message', content: 'Fix **the login** bug', createdAt: at, completedAt: at }),
    ]);
    expect(text.trim()).toBe('❯ Fix the login bug');
  });

  it('shows thinking with details on as grey Markdown', () => {
    const { text } = show([
      item(
        {
          id: 't',
          type: 'thinking',
          content: 'The user wants **two** things:\n\n- a fix\n- a test',
          createdAt: at,
          completedAt: at,
        },
        { expanded: true },
      ),
    ]);
    expect(text).toContain('✻ Thought (11 words)');
    expect(text).toContain('  The user wants two things:');
    expect(text).toContain('  • a fix');
  });

  it('shows an edit as a coloured diff under its call, folded unless details are on', () => {
    const before = Array.from({ length: 40 }, (_, index) => `const v${index} = ${index};`).join('\n');
    const after = before.replace(/= (\d+);/g, '= $1 * 2;');
    const call = toolUse('Edit', { file_path: 'src/values.ts', old_string: before, new_string: after });
    const folded = show([
      item(call),
      item(result('Edit', 'The file src/values.ts has been updated.'), { toolUse: call }),
    ]);
    expect(folded.text).toContain('✓ Edit(src/values.ts)');
    expect(folded.text).toContain('⎿ Updated src/values.ts (+40 −40)');
    expect(folded.text).toContain(' 1 - const v0 = 0;');
    expect(folded.text).toContain('… 69 more lines · Ctrl+O shows them in full');
    expect(folded.raw).toContain(`${RED} 1 - const v0 = 0;`);
    const full = show([item(result('Edit', 'updated'), { toolUse: call, expanded: true })]);
    expect(full.raw).toContain(`${GREEN} 1 + const v0 = 0 * 2;`);
    expect(full.text).toContain('40 + const v39 = 39 * 2;');
    expect(full.text).not.toContain('more lines');
  });

  it("shows Parley's own edit_file by the diff its result carries", () => {
    const call = toolUse('edit_file', { path: 'a.txt', old_text: 'x', new_text: 'y' });
    const { text } = show([
      item(
        result('edit_file', 'Edited a.txt', false, {
          path: 'a.txt',
          diff: '@@ -1,2 +1,2 @@\n keep\n-old line\n+new line\n',
        }),
        { toolUse: call },
      ),
    ]);
    expect(text).toContain('⎿ Updated a.txt (+1 −1)');
    expect(text).toContain('2 - old line');
    expect(text).toContain('2 + new line');
  });

  it('shows a shell command as a terminal block with its output', () => {
    const call = toolUse('Bash', { command: 'npm test -- auth' });
    const { raw, text } = show([
      item(call),
      item(result('Bash', 'FAIL test/auth.test.ts\n  ✕ keeps the session', true, { exitCode: 1 }), { toolUse: call }),
    ]);
    expect(text).toContain('✓ Bash(npm test -- auth)');
    expect(text).toContain('⎿ $ npm test -- auth');
    expect(text).toContain('│ FAIL test/auth.test.ts');
    expect(text).toContain('exit 1');
    expect(raw).toContain(`${RED}exit 1`);
  });

  it('shows another tool result as one line, its inline Markdown styled, and in full as Markdown with details on', () => {
    const call = toolUse('Task', { prompt: 'Look' });
    const content = 'Found **3** issues\n\n| a | b |\n|---|---|\n| 1 | 2 |';
    expect(show([item(result('Task', content), { toolUse: call })]).text.trim()).toBe('⎿ Found 3 issues (+4 lines)');
    const full = show([item(result('Task', content), { toolUse: call, expanded: true })]).text;
    expect(full).toContain('⎿ Found 3 issues');
    expect(full).toContain('│ 1 │ 2 │');
  });

  it('shows file contents a tool read as they are, not as Markdown', () => {
    const call = toolUse('Read', { file_path: 'run.py' });
    const { text } = show([item(result('Read', '# a comment\nprint("**")'), { toolUse: call, expanded: true })]);
    expect(text).toContain('⎿ # a comment');
    expect(text).toContain('print("**")');
  });
});

describe('an imported Claude Code session', () => {
  const sessionId = 'imported-1';
  const record = (fields: Record<string, unknown>) =>
    JSON.stringify({
      isSidechain: false,
      userType: 'external',
      entrypoint: 'cli',
      cwd: '/home/dev/src/demo',
      sessionId: 'cc-1',
      version: '2.1.221',
      gitBranch: 'main',
      timestamp: '2026-08-01T10:00:00.000Z',
      ...fields,
    });
  const assistant = (uuid: string, parent: string, content: unknown[]) =>
    record({
      type: 'assistant',
      uuid,
      parentUuid: parent,
      requestId: `req-${uuid}`,
      message: {
        id: `msg-${uuid}`,
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5-20250929',
        content,
        stop_reason: 'end_turn',
        usage: { input_tokens: 10, output_tokens: 20 },
      },
    });
  const transcript = [
    record({
      type: 'user',
      uuid: 'u1',
      parentUuid: null,
      message: { role: 'user', content: 'Why does login fail after the **redirect**?' },
    }),
    assistant('a1', 'u1', [{ type: 'text', text: SAMPLE_ANSWER }]),
    assistant('a2', 'a1', [
      {
        type: 'tool_use',
        id: 'toolu_edit',
        name: 'Edit',
        input: {
          file_path: '/home/dev/src/demo/src/auth.ts',
          old_string: "sameSite: 'strict'",
          new_string: "sameSite: 'lax'",
        },
      },
    ]),
    record({
      type: 'user',
      uuid: 'u2',
      parentUuid: 'a2',
      message: {
        role: 'user',
        content: [
          {
            tool_use_id: 'toolu_edit',
            type: 'tool_result',
            content: 'The file /home/dev/src/demo/src/auth.ts has been updated.',
          },
        ],
      },
      toolUseResult: {
        filePath: '/home/dev/src/demo/src/auth.ts',
        oldString: "sameSite: 'strict'",
        newString: "sameSite: 'lax'",
      },
    }),
    assistant('a3', 'u2', [
      {
        type: 'tool_use',
        id: 'toolu_bash',
        name: 'Bash',
        input: { command: 'npm test', description: 'Run the tests' },
      },
    ]),
    record({
      type: 'user',
      uuid: 'u3',
      parentUuid: 'a3',
      message: {
        role: 'user',
        content: [{ tool_use_id: 'toolu_bash', type: 'tool_result', content: 'Tests  12 passed (12)' }],
      },
      toolUseResult: { stdout: 'Tests  12 passed (12)', stderr: '', interrupted: false },
    }),
  ].join('\n');

  it('prints its answers as Markdown and its edit as a diff, as a live session does', () => {
    const parsed = parseClaudeCodeTranscript(transcript);
    expect(parsed.warnings).toEqual([]);
    const events = parsed.events.map((event, seq) => ({ ...event, sessionId, seq, at: event.at ?? at }) as StreamEvent);
    const status: DraftStatus = {
      sessionId,
      role: 'dev',
      project: 'demo',
      taskSlug: 'login',
      channelId: 'tui-1',
      backend: 'claude-sdk',
      status: 'active',
      turnCount: 1,
      cumulativeCostUsd: 0,
      costUnknown: false,
      lastInputTokens: 0,
      lastOutputTokens: 0,
      contextWindow: 200_000,
      maxOutputTokens: 8_192,
      contextPct: 0,
      startedAt: new Date(at).toISOString(),
      lastActivityAt: new Date(at).toISOString(),
      taskDir: '/tmp/task',
      turnRunning: false,
      activeAgents: 0,
    };
    const state = [
      { type: 'draft_loading', status },
      { type: 'history_loaded', sessionId, events, historyLimit: 400, now: at },
    ].reduce((current, action) => reduceView(current, action as Parameters<typeof reduceView>[1]), initialViewState());
    const { raw, text } = show(state.printed);
    expectNoMarkers(text);
    expect(text).toContain('❯ Why does login fail after the redirect?');
    expect(text).toMatch(/┌─+┬─+┬─+┐/);
    expect(text).toContain('✓ Edit(/home/dev/src/demo/src/auth.ts)');
    expect(text).toContain("1 - sameSite: 'strict'");
    expect(raw).toContain(`${GREEN}1 + sameSite: 'lax'`);
    expect(text).toContain('⎿ $ npm test');
    expect(text).toContain('│ Tests  12 passed (12)');
  });
});
