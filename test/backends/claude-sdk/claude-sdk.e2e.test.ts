/**
 * The claude-sdk back end through the real Claude Agent SDK 0.3.329 and the Claude Code 2.1.329
 * CLI it starts, against the fake Messages API on 127.0.0.1. Each CLI start costs ~0.5 s and
 * ~200 MB, so these run one after another in one file, and each test starts as few as it can.
 */
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClaudeSdkBackend,
  encodeCwd,
  type AgentBackend,
  type ExecuteRequest,
  type ToolDefinition,
  type Workspace,
} from '../../../src/backends/index.js';
import type { SubagentBlock, SystemBlock, ToolUseBlock } from '../../../src/conversation/index.js';
import {
  allMessageText,
  errorReply,
  isCompactionRequest,
  lastToolResults,
  lastUserText,
  reply,
  startFakeAnthropicServer,
  text,
  thinking,
  toolUse,
  type FakeAnthropicServer,
} from '../../fixtures/fake-anthropic-server.js';
import {
  assistantText,
  checkEventStream,
  collect,
  describeBackendConformance,
  finalMetadata,
  mainBlocks,
  reduce,
  systemBlocks,
} from '../conformance.js';

const never = new Promise<never>(() => undefined);
const MODEL = 'claude-sonnet-4-5'; // Claude Code prices it at $3 / $15 per million, window 200k, max output 32k

interface Harness {
  server: FakeAnthropicServer;
  root: string;
  cwd: string;
  configDir: string;
  backend: AgentBackend;
  workspace: Workspace;
  pidFile: string;
  crashNext: boolean;
  request(fields: Partial<ExecuteRequest> & { prompt: string }): ExecuteRequest;
  close(): Promise<void>;
}

/**
 * A fake API, a temp workspace and config dir, and the back end pointed at them. The CLI runs
 * through a wrapper that records its pid, so a test can kill it mid-turn like a crash would.
 */
async function startHarness(): Promise<Harness> {
  const server = await startFakeAnthropicServer();
  const root = await mkdtemp(join(tmpdir(), 'parley-claude-sdk-'));
  const cwd = join(root, 'work.space');
  const configDir = join(root, 'claude-config');
  const pidFile = join(root, 'cli.pid');
  const { mkdir } = await import('node:fs/promises');
  await mkdir(cwd, { recursive: true });
  const require = createRequire(import.meta.url);
  const binary = require.resolve('@anthropic-ai/claude-agent-sdk-linux-x64/claude');
  const wrapper = join(root, 'claude-wrapper.sh');
  await writeFile(wrapper, `#!/bin/sh\necho $$ > '${pidFile}'\nexec '${binary}' "$@"\n`);
  await chmod(wrapper, 0o755);
  const backend = createClaudeSdkBackend({
    configDir,
    cwd,
    apiKey: 'test-key',
    baseURL: server.url,
    maxRetries: 0,
    inheritEnv: false,
    pathToClaudeCodeExecutable: wrapper,
  });
  const harness: Harness = {
    server,
    root,
    cwd,
    configDir,
    backend,
    pidFile,
    crashNext: false,
    workspace: {
      cwd,
      writeFile: async (relativePath, content) => {
        const path = join(cwd, relativePath);
        await mkdir(join(path, '..'), { recursive: true });
        await writeFile(path, content);
      },
    },
    request: (fields) => ({ sessionId: `e2e-${randomUUID()}`, model: MODEL, cwd, ...fields }),
    close: async () => {
      await server.close();
      await rm(root, { recursive: true, force: true });
    },
  };
  server.setScript(async () => {
    if (!harness.crashNext) return errorReply(500, 'api_error', 'fake server: nothing scripted for this request');
    harness.crashNext = false;
    const pid = Number((await readFile(pidFile, 'utf8')).trim());
    process.kill(pid, 'SIGKILL');
    return { type: 'hang' };
  });
  return harness;
}

const lookupTool: ToolDefinition = {
  name: 'lookup',
  description: 'Looks a key up.',
  inputSchema: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
  execute: (input) => Promise.resolve({ content: `value of ${(input as { key: string }).key}` }),
};

describe.sequential('claude-sdk back end (real SDK and CLI, fake API)', () => {
  describeBackendConformance({
    name: 'claude-sdk',
    failureKinds: ['rate_limit', 'server_error', 'crash'],
    create: async () => {
      const harness = await startHarness();
      return {
        backend: harness.backend,
        request: (fields) => harness.request(fields),
        script: {
          text: (value) => harness.server.enqueue(reply(value, { chunkSize: 10 })),
          stall: (value) => harness.server.enqueue(reply(value, { chunkSize: 10, hold: never })),
          failure: (kind) => {
            if (kind === 'rate_limit') {
              harness.server.enqueue(
                errorReply(
                  429,
                  'rate_limit_error',
                  'Number of request tokens has exceeded your per-minute rate limit',
                  5,
                ),
              );
              return { code: 'RATE_LIMITED' };
            }
            if (kind === 'server_error') {
              harness.server.enqueue(errorReply(500, 'api_error', 'Internal server error'));
              return { code: 'SERVER_ERROR' };
            }
            harness.crashNext = true;
            return { code: 'PROCESS_FAILED' };
          },
          toolCall: (finalText) => {
            harness.server.enqueue(reply([toolUse('mcp__parley__lookup', { key: 'answer' })]), reply(finalText));
            return { request: { tools: [lookupTool] }, toolName: 'mcp__parley__lookup' };
          },
        },
        lastModelRequest: () => JSON.stringify(harness.server.messageRequests().at(-1)?.body?.messages ?? []),
        teardown: () => harness.close(),
      };
    },
  });

  describe('native behaviour', () => {
    let harness: Harness;
    beforeAll(async () => {
      harness = await startHarness();
    });
    afterAll(() => harness.close());

    it('maps thinking, partial text and the result: per-turn cost and API time across resume, window, output limit, turns', async () => {
      const { server, backend } = harness;
      const nativeSessionId = randomUUID();
      server.enqueue(
        reply([thinking('Pondering the request.'), text('First answer here.')], {
          usage: { input_tokens: 1_000, output_tokens: 100 },
        }),
      );
      const first = await collect(
        backend.execute(harness.request({ prompt: 'Turn one', nativeSessionId, isNewSession: true })),
      );
      checkEventStream(first);
      const blocks = mainBlocks(first);
      expect(blocks.map((block) => block.type)).toEqual(['thinking', 'assistant_text']);
      expect(blocks[0]!.type === 'thinking' && blocks[0]!.content).toBe('Pondering the request.');
      expect(first.filter((event) => event.type === 'text_delta').length).toBeGreaterThanOrEqual(3);
      const one = finalMetadata(first);
      expect(one).toMatchObject({
        usage: { inputTokens: 1_000, outputTokens: 100, cacheReadTokens: 0, cacheWriteTokens: 0 },
        model: MODEL,
        contextWindow: 200_000,
        maxOutputTokens: 32_000,
        numTurns: 1,
        nativeSessionId,
        stopReason: 'end_turn',
        turnComplete: true,
      });
      expect(one.costUsd).toBeCloseTo((1_000 * 3 + 100 * 15) / 1_000_000, 9);
      expect(one.durationApiMs).toBeGreaterThan(0);

      server.enqueue(reply('Second answer.', { usage: { input_tokens: 2_000, output_tokens: 10 } }));
      const second = await collect(
        backend.execute(harness.request({ prompt: 'Turn two', nativeSessionId, isNewSession: false })),
      );
      checkEventStream(second);
      const two = finalMetadata(second);
      // The CLI's total_cost_usd and duration_api_ms are cumulative across resume; Parley reports this turn's part.
      expect(two.costUsd).toBeCloseTo((2_000 * 3 + 10 * 15) / 1_000_000, 9);
      expect(two.durationApiMs).toBeLessThan((one.durationApiMs ?? 0) + (two.durationApiMs ?? 0) + 1);
      expect(two.usage).toEqual({ inputTokens: 2_000, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0 });
      expect(allMessageText(server.messageRequests().at(-1)!.body)).toContain('First answer here.');
    });

    it('reports each request of a tool loop once: occupancy is the last request, sums match the CLI', async () => {
      const { server, backend } = harness;
      server.enqueue(
        reply([toolUse('mcp__parley__lookup', { key: 'k1' })], { usage: { input_tokens: 500, output_tokens: 20 } }),
        reply('Looked it up.', { usage: { input_tokens: 700, output_tokens: 30 } }),
      );
      const events = await collect(backend.execute(harness.request({ prompt: 'Use the tool', tools: [lookupTool] })));
      checkEventStream(events);
      const metrics = reduce(events).metrics;
      expect(metrics.inputTokens).toBe(1_200);
      expect(metrics.outputTokens).toBe(50);
      expect(metrics.lastInputTokens).toBe(700);
      expect(metrics.costUsd).toBeCloseTo((1_200 * 3 + 50 * 15) / 1_000_000, 9);
      expect(lastToolResults(server.messageRequests().at(-1)!.body)).toEqual([
        // Claude Code appends a system reminder to tool results.
        expect.objectContaining({ content: expect.stringContaining('value of k1') as unknown, isError: false }),
      ]);
      const use = mainBlocks(events).find((block): block is ToolUseBlock => block.type === 'tool_use');
      expect(use).toMatchObject({ name: 'mcp__parley__lookup', input: { key: 'k1' }, status: 'success' });
    });

    it('gives a Parley tool every argument the model sent, also keys its schema does not list', async () => {
      const { server, backend } = harness;
      const received: unknown[] = [];
      const open: ToolDefinition = {
        name: 'record',
        description: 'Records whatever it gets.',
        inputSchema: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] },
        execute: (input) => {
          received.push(input);
          return Promise.reject(new Error('disk full'));
        },
      };
      server.enqueue(
        reply([toolUse('mcp__parley__record', { title: 'T', extra: { nested: [1, 2] } })]),
        reply('Recorded, with an error.'),
      );
      const events = await collect(backend.execute(harness.request({ prompt: 'Record it', tools: [open] })));
      checkEventStream(events);
      expect(received).toEqual([{ title: 'T', extra: { nested: [1, 2] } }]);
      const tools = server.messageRequests().at(-2)!.body?.tools ?? [];
      expect(tools.find((tool) => tool.name === 'mcp__parley__record')).toMatchObject({
        description: 'Records whatever it gets.',
      });
      // A tool that throws is an error result the model reads; the turn goes on.
      expect(lastToolResults(server.messageRequests().at(-1)!.body)[0]).toMatchObject({ isError: true });
      expect(mainBlocks(events).find((block): block is ToolUseBlock => block.type === 'tool_use')?.status).toBe(
        'error',
      );
      expect(assistantText(events)).toBe('Recorded, with an error.');
    });

    it('takes the permission mode and allowed tools from the profile: denied by default, run under bypassPermissions (as root too)', async () => {
      const { server, backend } = harness;
      const touch = () =>
        reply([toolUse('Bash', { command: 'touch created-by-agent.txt', description: 'create a file' })]);
      server.enqueue(touch(), reply('Could not create it.'));
      const denied = await collect(
        backend.execute(
          harness.request({ prompt: 'Create the file', profile: { name: 'dev', instructions: 'Develop.' } }),
        ),
      );
      checkEventStream(denied);
      expect(systemBlocks(denied, 'info').some((block) => block.content.startsWith('Permission denied for Bash'))).toBe(
        true,
      );
      expect(mainBlocks(denied).find((block): block is ToolUseBlock => block.type === 'tool_use')?.status).toBe(
        'error',
      );
      await expect(readFile(join(harness.cwd, 'created-by-agent.txt'), 'utf8')).rejects.toThrow();

      server.enqueue(touch(), reply('Created it.'));
      const allowed = await collect(
        backend.execute(
          harness.request({
            prompt: 'Create the file',
            profile: { name: 'dev', instructions: 'Develop.', permissionMode: 'bypassPermissions' },
          }),
        ),
      );
      checkEventStream(allowed);
      expect(systemBlocks(allowed, 'error')).toHaveLength(0);
      expect(mainBlocks(allowed).find((block): block is ToolUseBlock => block.type === 'tool_use')?.status).toBe(
        'success',
      );
      expect(await readFile(join(harness.cwd, 'created-by-agent.txt'), 'utf8')).toBe('');
    });

    it("runs Parley's tool hooks through the SDK's own callbacks: once per call, and a refusal stops the call", async () => {
      const { server, backend } = harness;
      const calls: string[] = [];
      const toolHooks: NonNullable<ExecuteRequest['toolHooks']> = {
        beforeTool: async ({ toolName, toolInput, toolUseId }) => {
          calls.push(`before ${toolName} ${toolUseId}`);
          const command = (toolInput as { command?: string }).command ?? '';
          return command.includes('refused') ? { block: 'Hooks say no to this file.' } : {};
        },
        afterTool: async ({ toolName, toolUseId, response }) => {
          calls.push(`after ${toolName} ${toolUseId} ${response.isError}`);
          return {};
        },
      };
      const profile = { name: 'dev', instructions: 'Develop.', permissionMode: 'bypassPermissions' as const };
      server.enqueue(
        reply([toolUse('Bash', { command: 'touch refused.txt', description: 'create a file' }, 'toolu_refused')]),
        reply('It was refused.'),
      );
      const refused = await collect(backend.execute(harness.request({ prompt: 'Create it', profile, toolHooks })));
      checkEventStream(refused);
      expect(calls).toEqual(['before Bash toolu_refused']);
      await expect(readFile(join(harness.cwd, 'refused.txt'), 'utf8')).rejects.toThrow();
      expect(JSON.stringify(lastToolResults(server.messageRequests().at(-1)!.body))).toContain(
        'Hooks say no to this file.',
      );

      calls.length = 0;
      server.enqueue(
        reply([toolUse('Bash', { command: 'touch allowed.txt', description: 'create a file' }, 'toolu_allowed')]),
        reply('Created it.'),
      );
      const allowed = await collect(backend.execute(harness.request({ prompt: 'Create it', profile, toolHooks })));
      checkEventStream(allowed);
      expect(calls).toEqual(['before Bash toolu_allowed', 'after Bash toolu_allowed false']);
      expect(await readFile(join(harness.cwd, 'allowed.txt'), 'utf8')).toBe('');
    });

    it('saves the transcript, and after the config dir is wiped and restored, resumes with the earlier history', async () => {
      const { server, backend, workspace } = harness;
      const nativeSessionId = randomUUID();
      server.enqueue(reply('I will remember PINEAPPLE.', { usage: { input_tokens: 300, output_tokens: 7 } }));
      const first = await collect(
        backend.execute(
          harness.request({ prompt: 'Remember the word PINEAPPLE.', nativeSessionId, isNewSession: true }),
        ),
      );
      expect(systemBlocks(first, 'error')).toHaveLength(0);
      const saved = await backend.readSessionTranscripts!(nativeSessionId, workspace);
      expect(saved?.main).toContain('PINEAPPLE');
      expect(saved?.main).toContain(`"sessionId":"${nativeSessionId}"`);
      const parsed = backend.parseTranscripts!(saved!);
      expect(parsed.nativeSessionId).toBe(nativeSessionId);
      expect(
        parsed.blocks
          .filter((block) => block.type === 'user_message' || block.type === 'assistant_text')
          .map((block) => block.content),
      ).toEqual(['Remember the word PINEAPPLE.', 'I will remember PINEAPPLE.']);

      await rm(harness.configDir, { recursive: true, force: true });
      expect(await backend.readSessionTranscripts!(nativeSessionId, workspace)).toBeUndefined();
      await backend.setupSessionTranscripts!(nativeSessionId, saved!, workspace);
      const restoredPath = join(harness.configDir, 'projects', encodeCwd(harness.cwd), `${nativeSessionId}.jsonl`);
      expect(await readFile(restoredPath, 'utf8')).toBe(saved!.main);

      server.enqueue(reply('The word was PINEAPPLE.', { usage: { input_tokens: 400, output_tokens: 8 } }));
      const second = await collect(
        backend.execute(harness.request({ prompt: 'Which word?', nativeSessionId, isNewSession: false })),
      );
      checkEventStream(second);
      expect(systemBlocks(second, 'error')).toHaveLength(0);
      const sent = allMessageText(server.messageRequests().at(-1)!.body);
      expect(sent).toContain('Remember the word PINEAPPLE.');
      expect(sent).toContain('I will remember PINEAPPLE.');
      expect(sent).toContain('Which word?');
      // The restored cost-state is the baseline: the second turn costs only its own tokens.
      expect(finalMetadata(second).costUsd).toBeCloseTo((400 * 3 + 8 * 15) / 1_000_000, 9);
    });

    it('a session whose transcript is gone ends with NATIVE_RESUME_FAILED, so the caller can fall back', async () => {
      const events = await collect(
        harness.backend.execute(
          harness.request({ prompt: 'Continue', nativeSessionId: randomUUID(), isNewSession: false }),
        ),
      );
      checkEventStream(events);
      const errors = systemBlocks(events, 'error');
      expect(errors).toHaveLength(1);
      expect(errors[0]!.data).toMatchObject({ code: 'NATIVE_RESUME_FAILED', retryable: false });
      expect(errors[0]!.content).toContain('could not resume');
    });

    it('a message injected while the turn runs reaches the model in the same turn', async () => {
      const { server, backend } = harness;
      let release: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => (release = resolve));
      server.enqueue(reply('Working on the first message, slowly.', { hold: gate }));
      server.setScript((request) => {
        if (lastUserText(request.body).includes('Also check the tests.')) return reply('Checked the tests too.');
        return errorReply(500, 'api_error', 'unexpected request');
      });
      const turn = backend.execute(harness.request({ prompt: 'Start the work' }));
      let injected = false;
      const events = await collect(turn, (event) => {
        if (event.type === 'text_delta' && !injected) {
          injected = true;
          void turn.inject!('Also check the tests.').then(() => release());
        }
      });
      checkEventStream(events);
      expect(systemBlocks(events, 'error')).toHaveLength(0);
      expect(assistantText(events)).toBe('Working on the first message, slowly.Checked the tests too.');
      expect(reduce(events).metrics.turns).toBe(1);
      await expect(turn.inject!('late')).rejects.toMatchObject({ code: 'TURN_NOT_RUNNING' });
    });

    it('runs a subagent as its own thread named by the Agent call, with a subagent block in main', async () => {
      const { server, backend } = harness;
      server.setScript((request) => {
        const last = lastUserText(request.body);
        if (last.includes('SURVEY-THE-CODE')) return reply('Found three modules.');
        if (lastToolResults(request.body).length > 0 || last.includes('task-notification'))
          return reply('The survey is done.');
        return errorReply(500, 'api_error', 'unexpected request');
      });
      server.enqueue(
        reply([
          toolUse(
            'Agent',
            { description: 'survey', prompt: 'SURVEY-THE-CODE please', subagent_type: 'general-purpose' },
            'toolu_agent1',
          ),
        ]),
      );
      const events = await collect(backend.execute(harness.request({ prompt: 'Delegate a survey' })));
      checkEventStream(events);
      const state = reduce(events);
      const subagent = state.blocks.find((block): block is SubagentBlock => block.type === 'subagent');
      expect(subagent).toMatchObject({
        subagentId: 'toolu_agent1',
        name: 'general-purpose',
        input: 'SURVEY-THE-CODE please',
        status: 'success',
      });
      expect(subagent?.output).toContain('Found three modules.');
      const thread = state.subagents.find((entry) => entry.id === 'toolu_agent1');
      expect(
        thread?.blocks.some((block) => block.type === 'assistant_text' && block.content === 'Found three modules.'),
      ).toBe(true);

      // The saved transcripts carry the subagent's own file, and parse into its thread.
      const nativeSessionId = finalMetadata(events).nativeSessionId!;
      const saved = await backend.readSessionTranscripts!(nativeSessionId, harness.workspace);
      expect(saved?.subagents).toHaveLength(1);
      const parsed = backend.parseTranscripts!(saved!);
      const parsedThread = parsed.subagents.find((entry) => entry.id === saved!.subagents![0]!.id);
      expect(parsedThread?.rawTranscript).toBe(saved!.subagents![0]!.rawTranscript);
      expect(
        parsedThread?.blocks.some(
          (block) => block.type === 'assistant_text' && block.content === 'Found three modules.',
        ),
      ).toBe(true);
      expect(parsed.blocks.some((block) => block.type === 'subagent')).toBe(true);
    });

    it('reports Claude Code compaction as a compaction system block with trigger and preTokens', async () => {
      const { server, backend } = harness;
      const nativeSessionId = randomUUID();
      server.enqueue(reply('Noted.', { usage: { input_tokens: 100, output_tokens: 10 } }));
      await collect(backend.execute(harness.request({ prompt: 'Some history to compact.', nativeSessionId })));
      server.setScript((request) =>
        isCompactionRequest(request.body)
          ? reply('<analysis>short</analysis>\n<summary>FAKE SUMMARY of the history.</summary>')
          : errorReply(500, 'api_error', 'unexpected request'),
      );
      const events = await collect(
        backend.execute(harness.request({ prompt: '/compact', nativeSessionId, isNewSession: false })),
      );
      checkEventStream(events);
      const compaction = systemBlocks(events, 'compaction');
      expect(compaction).toHaveLength(1);
      expect(compaction[0]!.data).toMatchObject({ trigger: 'manual', preTokens: 110 });
      expect(systemBlocks(events, 'error')).toHaveLength(0);
    });

    it('writes the profile where Claude Code reads it: CLAUDE.md reaches the model, the agent file is listed', async () => {
      const { server, backend, workspace } = harness;
      await backend.setupAgentProfile!(
        {
          name: 'code-reviewer',
          description: 'Reviews code for bugs.',
          instructions: 'ROLE-MARKER: review every diff twice.',
          allowedTools: ['Read'],
        },
        workspace,
      );
      server.enqueue(reply('Ready to review.'));
      const events = await collect(backend.execute(harness.request({ prompt: 'Who are you?' })));
      expect(systemBlocks(events, 'error')).toHaveLength(0);
      const body = JSON.stringify(server.messageRequests().at(-1)!.body);
      expect(body).toContain('ROLE-MARKER: review every diff twice.');
      expect(body).toContain('code-reviewer');
    });
  });
});

describe('claude-sdk back end availability', () => {
  it('with the SDK installed, finds the SDK and the Claude Code binary of this platform', async () => {
    const availability = await createClaudeSdkBackend().checkAvailability!();
    expect(availability.available).toBe(true);
    expect(availability.detail).toContain(`claude-agent-sdk-${process.platform}-${process.arch}`);
  });
});

describe('claude-sdk back end without the SDK', () => {
  it('ends the turn with NOT_INSTALLED saying what to install, without starting anything', async () => {
    const backend = createClaudeSdkBackend({
      loadSdk: () => import(['@anthropic-ai', 'claude-agent-sdk-not-installed'].join('/')) as never,
    });
    const events = await collect(backend.execute({ sessionId: 's', prompt: 'hello' }));
    checkEventStream(events);
    const [error] = systemBlocks(events, 'error') as SystemBlock[];
    expect(error!.data).toMatchObject({ code: 'NOT_INSTALLED', retryable: false });
    expect(error!.content).toContain('npm install --save-exact @anthropic-ai/claude-agent-sdk@0.3.329');
    const availability = await backend.checkAvailability!();
    expect(availability.available).toBe(false);
    expect(availability.detail).toContain('@anthropic-ai/claude-agent-sdk');
  });
});
