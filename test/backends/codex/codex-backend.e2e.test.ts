/**
 * The codex back end through the real Codex CLI (@openai/codex 0.163.0, run by @openai/codex-sdk)
 * against the fake Responses API. Each CLI run takes about a second and a few hundred MB, so the
 * file runs sequentially and keeps runs few. Outside CI a machine without the CLI skips these tests
 * with one loud line; in CI it is an error.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  fileEditOf,
  type ThinkingBlock,
  type ToolResultBlock,
  type ToolUseBlock,
} from '../../../src/conversation/index.js';
import {
  codexResolvable,
  createCodexBackend,
  createScriptedBackend,
  findRollout,
  type CodexBackendOptions,
  type NativeApprovalAsk,
  type NativeApprovalDecision,
} from '../../../src/backends/index.js';
import {
  inputTexts,
  startFakeResponsesServer,
  type FakeResponsesServer,
} from '../../fixtures/fake-openai-responses-server.js';
import { closeAll, harness, until, writeRole } from '../../draft/helpers.js';
import { assistantText, checkEventStream, collect, finalMetadata, mainBlocks, systemBlocks } from '../conformance.js';

function codexSkipReason(): string | undefined {
  if (codexResolvable()) return undefined;
  const reason = 'the Codex CLI is not installed (npm ci installs @openai/codex and @openai/codex-sdk)';
  if (process.env.CI === 'true') throw new Error(`${reason}. CI must run the codex back-end tests.`);
  console.warn(`\n!!! SKIPPING the codex back-end tests: ${reason}.\n`);
  return reason;
}

const skip = codexSkipReason() !== undefined;

describe.skipIf(skip).sequential('codex back end (real CLI)', () => {
  let server: FakeResponsesServer;
  let root: string;
  let workspace: string;
  let codexHome: string;
  const backend = (extra: CodexBackendOptions = {}) =>
    createCodexBackend({ apiKey: 'test-key', baseUrl: server.url, codexHome, maxRetries: 0, ...extra });

  beforeAll(async () => {
    server = await startFakeResponsesServer();
    root = await mkdtemp(join(tmpdir(), 'parley-codex-'));
    workspace = join(root, 'workspace');
    codexHome = join(root, 'codex-home');
    await mkdir(workspace, { recursive: true });
  });
  afterAll(async () => {
    await server.close();
    await rm(root, { recursive: true, force: true });
  });

  it('streams a turn with thinking, text and usage, then resumes the same thread natively', async () => {
    server.enqueue({
      reasoning: 'Considering a greeting',
      text: 'Hello from the fake model.',
      usage: { input_tokens: 1000, cached_tokens: 200, output_tokens: 40 },
    });
    const first = await collect(
      backend().execute({ sessionId: 'codex-1', prompt: 'Say hello', cwd: workspace, isNewSession: true }),
    );
    checkEventStream(first);
    expect(assistantText(first)).toBe('Hello from the fake model.');
    const thinking = mainBlocks(first).filter((block): block is ThinkingBlock => block.type === 'thinking');
    expect(thinking.map((block) => block.content)).toEqual(['Considering a greeting']);
    const metadata = finalMetadata(first);
    expect(metadata.stopReason).toBe('end_turn');
    expect(metadata.usage).toEqual({ inputTokens: 800, cacheReadTokens: 200, outputTokens: 40, cacheWriteTokens: 0 });
    // gpt-5-codex: $1.25 input, $0.125 cached, $10 output per million.
    expect(metadata.costUsd).toBeCloseTo((800 * 1.25 + 200 * 0.125 + 40 * 10) / 1_000_000, 10);
    expect(metadata.contextWindow).toBe(400_000);
    const threadId = metadata.nativeSessionId!;
    expect(threadId).toMatch(/^[0-9a-f-]{36}$/);
    expect(await findRollout(codexHome, threadId)).toContain(threadId);
    // Nothing but the fake was asked: the request carried Parley's key to Parley's provider.
    expect(server.responseRequests()[0]?.headers['authorization']).toBe('Bearer test-key');

    // Codex reports the thread's running total on a resumed thread; the turn's own usage is the difference.
    server.enqueue({ text: 'Second answer.', usage: { input_tokens: 3000, cached_tokens: 300, output_tokens: 60 } });
    // A new back end instance: the turn's own usage must come from the rollout, as after a restart.
    const second = await collect(
      backend().execute({
        sessionId: 'codex-1',
        prompt: 'And again',
        cwd: workspace,
        nativeSessionId: threadId,
        isNewSession: false,
      }),
    );
    checkEventStream(second);
    expect(assistantText(second)).toBe('Second answer.');
    const resumed = finalMetadata(second);
    expect(resumed.nativeSessionId).toBe(threadId);
    expect(resumed.usage).toEqual({ inputTokens: 2700, cacheReadTokens: 300, outputTokens: 60, cacheWriteTokens: 0 });
    const texts = inputTexts(server.responseRequests().at(-1)?.body);
    expect(texts).toContain('Say hello');
    expect(texts).toContain('Hello from the fake model.');
    expect(texts).toContain('And again');
  }, 60_000);

  it('shows a command execution as a shell tool call with its output and exit code', async () => {
    server.enqueue(
      { functionCalls: [{ name: 'exec_command', arguments: { cmd: 'echo parley-output; exit 3' } }] },
      { text: 'The command failed with 3.' },
    );
    const events = await collect(
      backend().execute({
        sessionId: 'codex-2',
        prompt: 'Run it',
        cwd: workspace,
        profile: { name: 'runner', instructions: 'Run commands.', permissionMode: 'bypassPermissions' },
      }),
    );
    checkEventStream(events);
    const blocks = mainBlocks(events);
    const toolUse = blocks.find((block): block is ToolUseBlock => block.type === 'tool_use');
    expect(toolUse?.name).toBe('shell');
    expect(toolUse?.input).toEqual({ command: expect.stringContaining('echo parley-output; exit 3') as string });
    expect(toolUse?.status).toBe('error');
    const result = blocks.find((block): block is ToolResultBlock => block.type === 'tool_result');
    expect(result?.toolUseId).toBe(toolUse?.toolUseId);
    expect(result?.content).toContain('parley-output');
    expect(result?.isError).toBe(true);
    expect(result?.output).toMatchObject({ exitCode: 3 });
    expect(assistantText(events)).toBe('The command failed with 3.');
    // The CLI sent the command's output back to the model.
    expect(inputTexts(server.responseRequests().at(-1)?.body).join('\n')).toContain('parley-output');
  }, 60_000);

  it('shows a file change as an edit with its diff, built from the patch Codex applied', async () => {
    await writeFile(join(workspace, 'notes.txt'), 'one\ntwo\nthree\n');
    const patch = '*** Begin Patch\n*** Update File: notes.txt\n@@\n one\n-two\n+TWO\n three\n*** End Patch\n';
    // A model Codex knows gets the freeform apply_patch tool.
    server.enqueue({ customToolCalls: [{ name: 'apply_patch', input: patch }] }, { text: 'Patched.' });
    const events = await collect(
      backend({ model: 'gpt-5.5' }).execute({
        sessionId: 'codex-5',
        prompt: 'Shout two',
        cwd: workspace,
        // Codex's sandbox helper cannot run with its home inside TMPDIR, as the test's is.
        profile: { name: 'editor', instructions: 'Edit files.', permissionMode: 'bypassPermissions' },
      }),
    );
    checkEventStream(events);
    expect(await readFile(join(workspace, 'notes.txt'), 'utf8')).toBe('one\nTWO\nthree\n');
    const blocks = mainBlocks(events);
    const call = blocks.find((block): block is ToolUseBlock => block.type === 'tool_use');
    const result = blocks.find((block): block is ToolResultBlock => block.type === 'tool_result');
    expect(call).toMatchObject({ name: 'edit_file', status: 'success' });
    const edit = fileEditOf(call!, result);
    expect(edit).toMatchObject({ path: join(workspace, 'notes.txt'), kind: 'edit', added: 1, removed: 1 });
    expect(edit?.hunks[0]?.lines).toEqual([
      { kind: ' ', text: 'one' },
      { kind: '-', text: 'two' },
      { kind: '+', text: 'TWO' },
      { kind: ' ', text: 'three' },
    ]);
    expect(assistantText(events)).toBe('Patched.');
  }, 60_000);

  it('serves Parley’s tools to Codex over MCP: the call runs in Parley, approved in advance, and is shown as a tool call', async () => {
    const calls: unknown[] = [];
    const draftWorker = {
      name: 'draft_worker',
      description: 'Drafts a worker agent for a task.',
      inputSchema: { type: 'object', properties: { task: { type: 'string' } }, required: ['task'] },
      execute: (input: unknown) => {
        calls.push(input);
        return Promise.resolve({ content: 'Worker w-1 drafted.', data: { workerId: 'w-1' } });
      },
    };
    // Codex serves an MCP server's tools in the namespace mcp__<server>.
    server.enqueue(
      { functionCalls: [{ name: 'draft_worker', namespace: 'mcp__parley', arguments: { task: 'Count the files' } }] },
      { text: 'A worker is on it.' },
    );
    const events = await collect(
      backend().execute({ sessionId: 'codex-6', prompt: 'Delegate', cwd: workspace, tools: [draftWorker] }),
    );
    checkEventStream(events);
    expect(calls).toEqual([{ task: 'Count the files' }]);
    const blocks = mainBlocks(events);
    expect(blocks.find((block) => block.type === 'tool_use')).toMatchObject({
      name: 'mcp__parley__draft_worker',
      input: { task: 'Count the files' },
      status: 'success',
    });
    expect(blocks.find((block) => block.type === 'tool_result')).toMatchObject({
      content: 'Worker w-1 drafted.',
      isError: false,
    });
    expect(inputTexts(server.responseRequests().at(-1)?.body).join('\n')).toContain('Worker w-1 drafted.');
    // Only the role's tools were offered.
    const offered = JSON.stringify(server.responseRequests().at(-2)?.body?.['tools']);
    expect(offered).toContain('"name":"mcp__parley"');
    expect(assistantText(events)).toBe('A worker is on it.');
  }, 60_000);

  it('reports a 429 as a rate-limit error block that says what to do', async () => {
    server.enqueue({ type: 'error', status: 429, message: 'Rate limit reached for gpt-5-codex.' });
    const events = await collect(backend().execute({ sessionId: 'codex-3', prompt: 'Hello?', cwd: workspace }));
    checkEventStream(events);
    const [error] = systemBlocks(events, 'error');
    expect(error?.data).toMatchObject({ code: 'RATE_LIMITED', retryable: true });
    expect(error?.content).toMatch(/rate limited.*Wait and send the message again/s);
    expect(finalMetadata(events).stopReason).toBe('error');
  }, 60_000);

  it('cancels a turn mid-stream and leaves the thread resumable', async () => {
    server.enqueue({ text: 'Never finished because the client left.', stall: true });
    const controller = new AbortController();
    const requestsBefore = server.responseRequests().length;
    const turn = backend().execute({
      sessionId: 'codex-4',
      prompt: 'Take long',
      cwd: workspace,
      signal: controller.signal,
    });
    void server.waitForResponseRequests(requestsBefore + 1).then(() => controller.abort());
    const events = await collect(turn);
    checkEventStream(events);
    expect(systemBlocks(events, 'aborted')).toHaveLength(1);
    const metadata = finalMetadata(events);
    expect(metadata.stopReason).toBe('aborted');
    const threadId = metadata.nativeSessionId!;
    expect(threadId).toBeDefined();

    server.enqueue({ text: 'Back again.' });
    const resumed = await collect(
      backend().execute({ sessionId: 'codex-4', prompt: 'Continue', cwd: workspace, nativeSessionId: threadId }),
    );
    expect(assistantText(resumed)).toBe('Back again.');
    expect(finalMetadata(resumed).nativeSessionId).toBe(threadId);
    expect(inputTexts(server.responseRequests().at(-1)?.body)).toContain('Take long');
  }, 60_000);

  describe('approvals through codex app-server', () => {
    // Codex's sandbox helper is not set up when its home lies inside TMPDIR, as the test's does:
    // the child gets a TMPDIR of its own, so a command it is allowed to run runs in the sandbox.
    const askingBackend = () => backend({ env: { TMPDIR: join(root, 'child-tmp') } });
    const asks: NativeApprovalAsk[] = [];
    const answering =
      (decision: NativeApprovalDecision) =>
      (ask: NativeApprovalAsk): Promise<NativeApprovalDecision> => {
        asks.push(ask);
        return Promise.resolve(decision);
      };
    beforeAll(async () => {
      await mkdir(join(root, 'child-tmp'), { recursive: true });
    });

    it('asks before a command; a deny means it never runs, an allow runs it', async () => {
      server.enqueue(
        { functionCalls: [{ name: 'exec_command', arguments: { cmd: 'touch denied.txt' } }] },
        { text: 'It was declined.' },
      );
      const denied = await collect(
        askingBackend().execute({
          sessionId: 'codex-ask-1',
          prompt: 'Make a file',
          cwd: workspace,
          askApproval: answering('deny'),
        }),
      );
      checkEventStream(denied);
      expect(asks).toHaveLength(1);
      const call = mainBlocks(denied).find((block): block is ToolUseBlock => block.type === 'tool_use');
      expect(asks[0]).toMatchObject({ kind: 'command', tool: 'shell', command: 'touch denied.txt', cwd: workspace });
      // The question names the call the conversation already shows.
      expect(asks[0]?.toolUseId).toBe(call?.toolUseId);
      expect(existsSync(join(workspace, 'denied.txt'))).toBe(false);
      const result = mainBlocks(denied).find((block): block is ToolResultBlock => block.type === 'tool_result');
      expect(result).toMatchObject({ isError: true, content: expect.stringContaining('declined') as string });
      expect(assistantText(denied)).toBe('It was declined.');
      expect(finalMetadata(denied).stopReason).toBe('end_turn');
      const threadId = finalMetadata(denied).nativeSessionId!;
      expect(threadId).toMatch(/^[0-9a-f-]{36}$/);

      // The same thread, resumed through the app server: this time the person allows it.
      server.enqueue(
        { functionCalls: [{ name: 'exec_command', arguments: { cmd: 'touch allowed.txt' } }] },
        { text: 'Made it.' },
      );
      const allowed = await collect(
        askingBackend().execute({
          sessionId: 'codex-ask-1',
          prompt: 'Make another',
          cwd: workspace,
          nativeSessionId: threadId,
          askApproval: answering('allow_once'),
        }),
      );
      checkEventStream(allowed);
      expect(asks).toHaveLength(2);
      expect(existsSync(join(workspace, 'allowed.txt'))).toBe(true);
      expect(finalMetadata(allowed).nativeSessionId).toBe(threadId);
      expect(assistantText(allowed)).toBe('Made it.');
      expect(inputTexts(server.responseRequests().at(-1)?.body)).toContain('Make a file');
    }, 90_000);

    it('asks before a patch with its diff; acceptEdits applies it without asking', async () => {
      await writeFile(join(workspace, 'asked.txt'), 'one\ntwo\n');
      const patch = '*** Begin Patch\n*** Update File: asked.txt\n@@\n one\n-two\n+TWO\n*** End Patch\n';
      server.enqueue({ customToolCalls: [{ name: 'apply_patch', input: patch }] }, { text: 'Left it.' });
      const before = asks.length;
      const denied = await collect(
        askingBackend().execute({
          sessionId: 'codex-ask-2',
          prompt: 'Shout two',
          cwd: workspace,
          askApproval: answering('deny'),
          // A model Codex knows gets the freeform apply_patch tool.
          model: 'gpt-5.5',
        }),
      );
      checkEventStream(denied);
      expect(asks.slice(before)).toEqual([
        expect.objectContaining({ kind: 'edit', tool: 'edit_file', diff: expect.stringContaining('+TWO') as string }),
      ]);
      expect(await readFile(join(workspace, 'asked.txt'), 'utf8')).toBe('one\ntwo\n');

      server.enqueue({ customToolCalls: [{ name: 'apply_patch', input: patch }] }, { text: 'Patched.' });
      const accepted = await collect(
        askingBackend().execute({
          sessionId: 'codex-ask-3',
          prompt: 'Shout two',
          cwd: workspace,
          model: 'gpt-5.5',
          profile: { name: 'editor', instructions: 'Edit files.', permissionMode: 'acceptEdits' },
          askApproval: answering('deny'),
        }),
      );
      checkEventStream(accepted);
      expect(asks).toHaveLength(before + 1);
      expect(await readFile(join(workspace, 'asked.txt'), 'utf8')).toBe('one\nTWO\n');
      const blocks = mainBlocks(accepted);
      const call = blocks.find((block): block is ToolUseBlock => block.type === 'tool_use');
      const result = blocks.find((block): block is ToolResultBlock => block.type === 'tool_result');
      // Codex's own diff of the change, as the SDK path's rebuilt one.
      expect(fileEditOf(call!, result)).toMatchObject({ kind: 'edit', added: 1, removed: 1 });
    }, 90_000);

    it('a codex draft asks on its channel: a client sees the request, and its deny keeps the command from running', async () => {
      const h = await harness({ backends: { default: askingBackend() } });
      try {
        const [project] = await h.service.listProjects();
        const task = await h.service.createTask({ project: project!.name, title: 'Make a file' });
        const drafted = await h.service.draft({ channelId: 'c', role: 'dev', project: project!.name, task: task.slug });
        server.enqueue(
          { functionCalls: [{ name: 'exec_command', arguments: { cmd: 'touch from-draft.txt' } }] },
          { text: 'Not made.' },
        );
        await h.service.submitPrompt({ channelId: 'c', content: 'Make a file' });
        await until(() => h.recorder.of('permission_requested').length === 1, 'the approval request');
        const [asked] = h.recorder.of('permission_requested');
        expect(asked?.channelId).toBe('c');
        // The workspace tools' request shape: the folder relative to the project, a prefix to remember.
        expect(asked?.request).toMatchObject({
          sessionId: drafted.sessionId,
          kind: 'command',
          tool: 'shell',
          command: 'touch from-draft.txt',
          cwd: '.',
          allowAlwaysScope: 'commands starting with "touch"',
        });
        expect((await h.service.getPermissions({ channelId: 'c' })).requests).toHaveLength(1);
        await h.service.answerPermission({
          sessionId: drafted.sessionId,
          requestId: asked!.request.requestId,
          decision: 'deny',
        });
        await h.service.settled({ channelId: 'c' });
        expect(existsSync(join(h.root, 'from-draft.txt'))).toBe(false);
        const blocks = (await h.manager.loadConversation(drafted.sessionId)).blocks;
        expect(blocks.find((block) => block.type === 'tool_result')).toMatchObject({ isError: true });
        expect(blocks.filter((block) => block.type === 'system').map((block) => block.content)).toEqual(
          expect.arrayContaining(['Waiting for your approval: Run `touch from-draft.txt`', 'Denied.']),
        );
      } finally {
        await closeAll();
      }
    }, 90_000);

    it('a codex draft drafts a worker through Parley’s MCP tools, and the worker runs to its result', async () => {
      const worker = createScriptedBackend({ name: 'worker-backend' });
      const h = await harness({ backends: { default: askingBackend(), 'worker-backend': worker } });
      try {
        await writeRole(h.dataDir, 'scribe.md', '---\ndescription: Counts\nbackend: worker-backend\n---\nYou count.\n');
        const [project] = await h.service.listProjects();
        const task = await h.service.createTask({ project: project!.name, title: 'Count' });
        const drafted = await h.service.draft({
          channelId: 'w',
          role: 'product-analyst',
          project: project!.name,
          task: task.slug,
        });
        server.enqueue(
          {
            functionCalls: [
              {
                name: 'draft_agent',
                namespace: 'mcp__parley',
                arguments: { role: 'scribe', prompt: 'Count the files' },
              },
            ],
          },
          { text: 'A scribe is on it.' },
        );
        await h.service.submitPrompt({ channelId: 'w', content: 'Get the files counted' });
        await h.service.settled({ channelId: 'w' });
        const agents = await h.service.listAgents({});
        const scribe = agents.find((agent) => agent.role === 'scribe');
        expect(scribe).toBeDefined();
        await until(
          () =>
            worker.calls.length === 1 &&
            h.recorder
              .of('agent_status')
              .some((event) => event.agent.role === 'scribe' && event.agent.status === 'completed'),
          'the worker’s end',
        );
        expect(worker.calls[0]?.prompt).toContain('Count the files');
        const blocks = (await h.manager.loadConversation(drafted.sessionId)).blocks;
        expect(blocks.find((block) => block.type === 'tool_use')).toMatchObject({
          name: 'mcp__parley__draft_agent',
          input: { role: 'scribe', prompt: 'Count the files' },
          status: 'success',
        });
        // The tool's answer (the worker's id) went back to the model.
        expect(inputTexts(server.responseRequests().at(-1)?.body).join('\n')).toContain(scribe!.agentId);
      } finally {
        await closeAll();
      }
    }, 90_000);

    it('cancels a turn waiting on the model and leaves the thread resumable', async () => {
      server.enqueue({ text: 'Never finished.', stall: true });
      const controller = new AbortController();
      const requestsBefore = server.responseRequests().length;
      const turn = askingBackend().execute({
        sessionId: 'codex-ask-4',
        prompt: 'Take long',
        cwd: workspace,
        signal: controller.signal,
        askApproval: answering('deny'),
      });
      void server.waitForResponseRequests(requestsBefore + 1).then(() => controller.abort());
      const events = await collect(turn);
      checkEventStream(events);
      expect(systemBlocks(events, 'aborted')).toHaveLength(1);
      expect(finalMetadata(events).stopReason).toBe('aborted');
      const threadId = finalMetadata(events).nativeSessionId!;
      expect(threadId).toBeDefined();

      server.enqueue({ text: 'Back again.' });
      const resumed = await collect(
        askingBackend().execute({
          sessionId: 'codex-ask-4',
          prompt: 'Continue',
          cwd: workspace,
          nativeSessionId: threadId,
          askApproval: answering('deny'),
        }),
      );
      expect(assistantText(resumed)).toBe('Back again.');
      expect(finalMetadata(resumed).nativeSessionId).toBe(threadId);
      expect(inputTexts(server.responseRequests().at(-1)?.body)).toContain('Take long');
    }, 90_000);
  });
});
