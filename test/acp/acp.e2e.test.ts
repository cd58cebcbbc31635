import { mkdtemp, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SessionUpdate } from '@agentclientprotocol/sdk';
import { startFakeOpenAiServer } from '../fixtures/fake-openai-server.js';
import { runParley } from '../helpers/run-parley.js';
import { agentText, Editor, spawnParleyAcp, tsx, type EditorOptions } from './acp-process.js';

/**
 * `parley acp` as an editor runs it: a child process driven by the ACP SDK's client over stdio,
 * playing the scripted back end (PARLEY_SCRIPTED_SCRIPT) in a temp project.
 */

let project: string;
const editors: Editor[] = [];

beforeEach(async () => {
  project = await mkdtemp(join(tmpdir(), 'parley-acp-'));
});

afterEach(async () => {
  for (const editor of editors.splice(0)) await editor.close();
  await rm(project, { recursive: true, force: true });
});

async function startEditor(script: unknown, options: EditorOptions & { args?: string[] } = {}): Promise<Editor> {
  const scriptPath = join(project, `script-${editors.length}.json`);
  await writeFile(scriptPath, JSON.stringify(script));
  const editor = new Editor(
    spawnParleyAcp({
      cwd: project,
      env: { PARLEY_SCRIPTED_SCRIPT: scriptPath },
      ...(options.args ? { args: options.args } : {}),
    }),
    options,
  );
  editors.push(editor);
  await editor.initialize();
  return editor;
}

function kinds(updates: readonly SessionUpdate[]): string[] {
  return updates.map((update) => update.sessionUpdate);
}

describe('parley acp', () => {
  it('initializes, opens a session with roles as modes and back end and model as options, and streams a turn', async () => {
    await mkdir(join(project, '.parley', 'roles'), { recursive: true });
    await writeFile(
      join(project, '.parley', 'roles', 'reviewer.md'),
      '---\ndescription: Reviews pull requests\n---\nYou review.\n',
    );
    const file = join(project, 'src.ts');
    const editor = await startEditor({
      turns: [
        [
          { type: 'thinking', text: 'Let me look.' },
          { type: 'tool', name: 'Read', input: { file_path: file }, output: 'const a = 1;\n' },
          {
            type: 'tool',
            name: 'Edit',
            input: { file_path: file, old_string: 'const a = 1;', new_string: 'const a = 2;' },
            output: 'edited',
          },
          { type: 'tool', name: 'Bash', input: { command: 'false' }, output: 'exit 1', isError: true },
          {
            type: 'subagent',
            name: 'qa',
            input: 'Check the change',
            steps: [{ type: 'text', text: 'No defects found.' }],
          },
          { type: 'text', text: 'Changed a to 2.', chunks: ['Changed ', 'a to ', '2.'] },
        ],
      ],
    });
    const initialized = await editor.initialize();
    expect(initialized.agentCapabilities).toMatchObject({
      loadSession: true,
      sessionCapabilities: { list: {} },
      promptCapabilities: { embeddedContext: true },
    });
    expect(initialized.authMethods).toEqual([]);

    const created = await editor.agent.request('session/new', { cwd: project, mcpServers: [] });
    expect(created.modes?.availableModes.map((mode) => mode.id)).toEqual(
      expect.arrayContaining(['product-analyst', 'dev', 'qa', 'reviewer']),
    );
    expect(created.modes?.currentModeId).toBe('product-analyst');
    expect(created.configOptions?.map((option) => option.id)).toEqual(['backend', 'model']);
    expect(created.configOptions?.[0]).toMatchObject({ currentValue: 'scripted' });

    const { stopReason } = await editor.agent.request('session/prompt', {
      sessionId: created.sessionId,
      prompt: [{ type: 'text', text: 'Bump a' }],
    });
    expect(stopReason).toBe('end_turn');
    const updates = editor.updatesOf(created.sessionId);
    const chunks = updates.filter((update) => update.sessionUpdate === 'agent_message_chunk');
    expect(chunks.length).toBeGreaterThanOrEqual(3);
    expect(agentText(updates)).toContain('Changed a to 2.');
    const thoughts = updates.flatMap((update) =>
      update.sessionUpdate === 'agent_thought_chunk' && update.content.type === 'text' ? [update.content.text] : [],
    );
    expect(thoughts.join('')).toBe('Let me look.');

    const calls = updates.filter((update) => update.sessionUpdate === 'tool_call');
    expect(calls.map((call) => [call.title, call.kind])).toEqual([
      [`Read ${file}`, 'read'],
      [`Edit ${file}`, 'edit'],
      ['Run `false`', 'execute'],
      ['Worker qa', 'think'],
    ]);
    expect(calls[0]).toMatchObject({ rawInput: { file_path: file }, locations: [{ path: file }] });
    const ends = updates.filter(
      (update) =>
        update.sessionUpdate === 'tool_call_update' && (update.status === 'completed' || update.status === 'failed'),
    );
    expect(ends.map((update) => update.sessionUpdate === 'tool_call_update' && update.status)).toEqual([
      'completed',
      'completed',
      'failed',
      'completed',
    ]);
    expect(ends[1]).toMatchObject({
      content: [{ type: 'diff', path: file, oldText: 'const a = 1;', newText: 'const a = 2;' }],
    });
    expect(ends[3]).toMatchObject({
      content: [{ type: 'content', content: { type: 'text', text: 'No defects found.' } }],
    });
    // The worker's answer streamed into its tool call before it ended.
    expect(
      updates.some(
        (update) =>
          update.sessionUpdate === 'tool_call_update' &&
          update.status === 'in_progress' &&
          JSON.stringify(update.content ?? []).includes('No defects found.'),
      ),
    ).toBe(true);
    expect(kinds(updates)).toContain('usage_update');
    expect(updates.find((update) => update.sessionUpdate === 'usage_update')).toMatchObject({ size: 200_000 });
    expect(updates.at(-1)).toMatchObject({
      sessionUpdate: 'session_info_update',
      title: 'Bump a',
      _meta: { parley: { turns: 1 } },
    });
  });

  it('switches mode and back end, and refuses what it does not know with ACP errors', async () => {
    const editor = await startEditor({ turns: [] });
    const { sessionId } = await editor.agent.request('session/new', { cwd: project, mcpServers: [] });
    await editor.agent.request('session/set_mode', { sessionId, modeId: 'dev' });
    await expect(editor.agent.request('session/set_mode', { sessionId, modeId: 'nobody' })).rejects.toMatchObject({
      code: -32602,
    });
    const changed = await editor.agent.request('session/set_config_option', {
      sessionId,
      configId: 'model',
      value: 'scripted-large',
    });
    expect(changed.configOptions[1]).toMatchObject({ currentValue: 'scripted-large' });
    await expect(
      editor.agent.request('session/set_config_option', { sessionId, configId: 'backend', value: 'nope' }),
    ).rejects.toMatchObject({ code: -32602 });
    await expect(
      editor.agent.request('session/prompt', { sessionId: 'no-such-session', prompt: [{ type: 'text', text: 'hi' }] }),
    ).rejects.toMatchObject({ code: -32002 });
    await expect(
      editor.agent.request('session/load', { sessionId: 'no-such-session', cwd: project, mcpServers: [] }),
    ).rejects.toMatchObject({ code: -32002 });
    await expect(
      editor.agent.request('session/prompt', {
        sessionId,
        prompt: [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }],
      }),
    ).rejects.toMatchObject({ code: -32602 });
    await expect(editor.agent.request('session/new', { cwd: 'relative/path', mcpServers: [] })).rejects.toMatchObject({
      code: -32602,
    });
  });

  it('cancels a turn mid-stream: the prompt ends cancelled, a second prompt meanwhile is refused, and the partial answer is kept', async () => {
    const editor = await startEditor({
      turns: [
        [
          { type: 'text', text: 'Half an answer' },
          { type: 'delay', ms: 60_000 },
          { type: 'text', text: 'never' },
        ],
      ],
    });
    const { sessionId } = await editor.agent.request('session/new', { cwd: project, mcpServers: [] });
    const prompt = editor.agent.request('session/prompt', {
      sessionId,
      prompt: [{ type: 'text', text: 'Take your time' }],
    });
    await editor.waitFor(
      (notification) =>
        notification.sessionId === sessionId && notification.update.sessionUpdate === 'agent_message_chunk',
    );
    await expect(
      editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'again' }] }),
    ).rejects.toMatchObject({
      code: -32600,
      data: { code: 'TURN_IN_PROGRESS' },
    });
    await editor.agent.notify('session/cancel', { sessionId });
    expect(await prompt).toEqual({ stopReason: 'cancelled' });
    expect(agentText(editor.updatesOf(sessionId))).not.toContain('never');

    // A new process (an editor restart) loads it: the partial answer and the abort are both there.
    expect(await editor.close()).toBe(0);
    const next = await startEditor({ turns: [] });
    await next.agent.request('session/load', { sessionId, cwd: project, mcpServers: [] });
    const replayed = agentText(next.updatesOf(sessionId));
    expect(replayed).toContain('Half an answer');
    expect(replayed.toLowerCase()).toMatch(/abort|interrupt|cancel/);
  });

  it('lists and loads a native session in a new process, replays it, and the next prompt continues it', async () => {
    const first = await startEditor({ turns: [[{ type: 'text', text: 'First answer.' }]] });
    const { sessionId } = await first.agent.request('session/new', { cwd: project, mcpServers: [] });
    await first.agent.request('session/prompt', {
      sessionId,
      prompt: [{ type: 'text', text: 'First question?\nWith a second line.' }],
    });
    await first.close();

    const second = await startEditor({ turns: [[{ type: 'text', text: 'Second answer.' }]] });
    const listed = await second.agent.request('session/list', { cwd: project });
    // Titled as the terminal and the browser title a first message's task: its first line.
    expect(listed.sessions).toEqual([
      expect.objectContaining({ sessionId, cwd: resolve(project), title: 'First question' }),
    ]);
    const loaded = await second.agent.request('session/load', { sessionId, cwd: project, mcpServers: [] });
    expect(loaded.modes?.currentModeId).toBe('product-analyst');
    const replay = second.updatesOf(sessionId);
    expect(replay.slice(0, 2)).toEqual([
      { sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'First question?\nWith a second line.' } },
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'First answer.' } },
    ]);
    const { stopReason } = await second.agent.request('session/prompt', {
      sessionId,
      prompt: [{ type: 'text', text: 'Second question' }],
    });
    expect(stopReason).toBe('end_turn');
    expect(agentText(second.updatesOf(sessionId).slice(replay.length))).toBe('Second answer.');
    await second.close();

    const third = await startEditor({ turns: [] });
    await third.agent.request('session/load', { sessionId, cwd: project, mcpServers: [] });
    const all = third.updatesOf(sessionId).filter((update) => update.sessionUpdate === 'user_message_chunk');
    expect(
      all.map(
        (update) =>
          update.sessionUpdate === 'user_message_chunk' && update.content.type === 'text' && update.content.text,
      ),
    ).toEqual(['First question?\nWith a second line.', 'Second question']);
  });

  it('loads an imported Claude Code session, replays its messages and tools, and continues it on the scripted back end', async () => {
    const fixture = resolve(
      'test/fixtures/transcripts/claude-code/-home-dev-src-demo/5f2b1c9e-3d4a-4e8b-9f10-2a6c7d8e9f01.jsonl',
    );
    const imported = await runParley(['import', fixture, '--json'], { cwd: project });
    expect(imported.code).toBe(0);
    const importedId = (JSON.parse(imported.stdout) as { sessions: Array<{ sessionId: string }> }).sessions[0]!
      .sessionId;

    const editor = await startEditor({ turns: [[{ type: 'text', text: 'Continuing the imported work.' }]] });
    const listed = await editor.agent.request('session/list', { cwd: project });
    expect(listed.sessions.map((session) => session.sessionId)).toContain(importedId);
    await editor.agent.request('session/load', { sessionId: importedId, cwd: project, mcpServers: [] });
    const replay = editor.updatesOf(importedId);
    expect(kinds(replay)).toEqual(
      expect.arrayContaining(['user_message_chunk', 'agent_message_chunk', 'tool_call', 'tool_call_update']),
    );
    expect(
      replay
        .filter((update) => update.sessionUpdate === 'tool_call')
        .map((update) => update.sessionUpdate === 'tool_call' && update.kind),
    ).toEqual(expect.arrayContaining(['read', 'execute', 'edit']));
    const { stopReason } = await editor.agent.request('session/prompt', {
      sessionId: importedId,
      prompt: [{ type: 'text', text: 'Go on' }],
    });
    expect(stopReason).toBe('end_turn');
    expect(agentText(editor.updatesOf(importedId).slice(replay.length))).toContain('Continuing the imported work.');
  });

  it('continues an imported Claude Code session on the openai-compatible back end, against the fake OpenAI server, with its history in the request', async () => {
    const fixture = resolve(
      'test/fixtures/transcripts/claude-code/-home-dev-src-demo/5f2b1c9e-3d4a-4e8b-9f10-2a6c7d8e9f01.jsonl',
    );
    const imported = await runParley(['import', fixture, '--json'], { cwd: project });
    const importedId = (JSON.parse(imported.stdout) as { sessions: Array<{ sessionId: string }> }).sessions[0]!
      .sessionId;
    const openai = await startFakeOpenAiServer();
    try {
      openai.enqueue({
        text: 'The verbose flag is in; next I would add a test.',
        usage: { prompt_tokens: 900, completion_tokens: 12 },
      });
      const editor = new Editor(
        spawnParleyAcp({ cwd: project, env: { OPENAI_API_KEY: 'dummy', OPENAI_BASE_URL: openai.url } }),
      );
      editors.push(editor);
      await editor.initialize();
      const loaded = await editor.agent.request('session/load', {
        sessionId: importedId,
        cwd: project,
        mcpServers: [],
      });
      expect(loaded.configOptions?.[0]).toMatchObject({ id: 'backend', currentValue: 'openai-compatible' });
      await editor.agent.request('session/set_config_option', {
        sessionId: importedId,
        configId: 'model',
        value: 'fake-model',
      });
      const replayed = editor.updatesOf(importedId).length;
      const { stopReason } = await editor.agent.request('session/prompt', {
        sessionId: importedId,
        prompt: [{ type: 'text', text: 'What is left?' }],
      });
      expect(stopReason).toBe('end_turn');
      // The move is said first (a system block), then the answer.
      const said = agentText(editor.updatesOf(importedId).slice(replayed));
      expect(said).toContain('This session now continues on openai-compatible');
      expect(said.endsWith('The verbose flag is in; next I would add a test.')).toBe(true);
      const messages = openai.completions().at(-1)!['messages'] as Array<{ role: string; content: string }>;
      expect(messages[0]!.content).toContain('Add a --verbose flag to the CLI');
      expect(messages.at(-1)).toMatchObject({ role: 'user', content: 'What is left?' });
    } finally {
      await openai.close();
    }
  });

  it('asks the editor before a tool the role gates, and honours reject, allow always and allow once', async () => {
    const createTask = (title: string) => ({ type: 'tool', name: 'create_task', input: { title } });
    const answers = ['reject_once', 'allow_always', 'allow_once'];
    // What the editor had been told of when each question came.
    const toldBefore: SessionUpdate[][] = [];
    let sessionId = '';
    const editor: Editor = await startEditor(
      {
        turns: [[createTask('Rejected task')], [createTask('First allowed task')], [createTask('Second allowed task')]],
      },
      {
        permission: () => {
          toldBefore.push(editor.updatesOf(sessionId));
          return { outcome: { outcome: 'selected', optionId: answers.shift()! } };
        },
      },
    );
    ({ sessionId } = await editor.agent.request('session/new', { cwd: project, mcpServers: [] }));
    for (const text of ['one', 'two', 'three'])
      await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text }] });
    expect(editor.permissionRequests.map((request) => request.toolCall.title)).toEqual([
      'create_task (needs projects-create)',
      'create_task (needs projects-create)',
    ]);
    expect(editor.permissionRequests[0]!.options.map((option) => option.kind)).toEqual([
      'allow_once',
      'allow_always',
      'reject_once',
    ]);
    // The last word on each tool call.
    const last = new Map<string, SessionUpdate>();
    for (const update of editor.updatesOf(sessionId))
      if (update.sessionUpdate === 'tool_call_update' && update.status !== 'in_progress')
        last.set(update.toolCallId, update);
    const results = [...last.values()];
    expect(results.map((update) => update.sessionUpdate === 'tool_call_update' && update.status)).toEqual([
      'failed',
      'completed',
      'completed',
    ]);
    expect(JSON.stringify(results[0])).toContain('declined');
    // Each question names a tool call the editor was shown (pending) before it; the rejected one ends failed.
    editor.permissionRequests.forEach((request, index) => {
      expect(toldBefore[index]).toContainEqual(
        expect.objectContaining({
          sessionUpdate: 'tool_call',
          toolCallId: request.toolCall.toolCallId,
          status: 'pending',
        }),
      );
    });
    expect(results[0]).toMatchObject({ toolCallId: editor.permissionRequests[0]!.toolCall.toolCallId });
    expect((await readdir(join(project, '.parley', 'tasks'))).sort()).toEqual([
      'first-allowed-task',
      'second-allowed-task',
    ]);
  });

  it("shows a worker the product analyst drafts as a tool call that streams the worker's answer", async () => {
    const editor = await startEditor({
      turns: [
        [
          { type: 'tool', name: 'draft_agent', input: { role: 'dev', prompt: 'Fix the parser' } },
          { type: 'text', text: 'A developer is on it.' },
        ],
        [{ type: 'text', text: 'Parser fixed, tests pass.' }],
      ],
    });
    const { sessionId } = await editor.agent.request('session/new', { cwd: project, mcpServers: [] });
    expect(
      await editor.agent.request('session/prompt', {
        sessionId,
        prompt: [{ type: 'text', text: 'Get the parser fixed' }],
      }),
    ).toEqual({ stopReason: 'end_turn' });
    expect(editor.permissionRequests.map((request) => request.toolCall.title)).toEqual([
      'draft_agent (needs agent-draft)',
    ]);
    // The worker runs on after the turn; its updates arrive as they are stored.
    const ended = await editor.waitFor(
      (notification) =>
        notification.sessionId === sessionId &&
        notification.update.sessionUpdate === 'tool_call_update' &&
        notification.update.status === 'completed' &&
        notification.update.toolCallId.startsWith('subagent-'),
    );
    expect(ended.update).toMatchObject({
      content: [{ type: 'content', content: { type: 'text', text: 'Parser fixed, tests pass.' } }],
    });
    const call = editor
      .updatesOf(sessionId)
      .find((update) => update.sessionUpdate === 'tool_call' && update.title === 'Worker dev');
    expect(call).toMatchObject({ kind: 'think', rawInput: { role: 'dev', prompt: 'Fix the parser' } });
  });

  it('keeps every session in --data-dir, and a second process on that folder uses it through the first', async () => {
    const dataDir = join(project, 'shared-data');
    const first = await startEditor(
      { turns: [[{ type: 'text', text: 'Stored.' }]] },
      { args: ['--data-dir', dataDir] },
    );
    const { sessionId } = await first.agent.request('session/new', { cwd: project, mcpServers: [] });
    await first.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'Keep this' }] });
    expect(await readdir(join(dataDir, 'sessions'))).toContain(sessionId);

    const second = await startEditor({ turns: [] }, { args: ['--data-dir', dataDir] });
    const listed = await second.agent.request('session/list', { cwd: project });
    expect(listed.sessions).toEqual([expect.objectContaining({ sessionId, title: 'Keep this' })]);
    const { sessionId: another } = await second.agent.request('session/new', { cwd: project, mcpServers: [] });
    expect(await readdir(join(dataDir, 'sessions'))).toContain(another);
  });

  it('refuses --store (PostgreSQL) with a message saying what to do, rather than keeping the sessions in a folder unseen', async () => {
    const refused = await runParley(['--store', 'postgres://127.0.0.1:9/parley', 'acp'], { cwd: project });
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain('cannot use --store');
    expect(refused.stderr).toContain('parley serve --store');
    await expect(readdir(join(project, '.parley'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it("gives the agent the editor's MCP servers as tools", async () => {
    const editor = await startEditor({
      turns: [[{ type: 'tool', name: 'echo__shout', input: { text: 'hello from the editor' } }]],
    });
    const { sessionId } = await editor.agent.request('session/new', {
      cwd: project,
      mcpServers: [
        {
          name: 'echo',
          command: process.execPath,
          args: ['--import', tsx, resolve('test/fixtures/echo-mcp-server.ts')],
          env: [],
        },
      ],
    });
    await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'shout' }] });
    const done = editor
      .updatesOf(sessionId)
      .find((update) => update.sessionUpdate === 'tool_call_update' && update.status === 'completed');
    expect(done).toMatchObject({
      content: [{ type: 'content', content: { type: 'text', text: 'HELLO FROM THE EDITOR' } }],
    });
  });
});
