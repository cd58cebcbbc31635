import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ForkSessionResponse, InitializeResponse } from '@agentclientprotocol/sdk/unstable';
import { RequestError } from '@agentclientprotocol/sdk';
import { agentText, Editor, spawnParleyAcp } from './acp-process.js';

/**
 * `session/fork` through the ACP SDK's client against a `parley acp` process on the scripted back
 * end. The method is in the SDK's unstable schema, so its types come from there.
 */

let project: string;
let editor: Editor | undefined;

beforeEach(async () => {
  project = await mkdtemp(join(tmpdir(), 'parley-acp-fork-'));
});

afterEach(async () => {
  await editor?.close();
  editor = undefined;
  await rm(project, { recursive: true, force: true });
});

function texts(updates: ReturnType<Editor['updatesOf']>, kind: 'user_message_chunk' | 'agent_message_chunk'): string[] {
  return updates.flatMap((update) =>
    update.sessionUpdate === kind && update.content.type === 'text' ? [update.content.text] : [],
  );
}

async function errorOf(promise: Promise<unknown>): Promise<RequestError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (error instanceof RequestError) return error;
  throw new Error(`expected an ACP error, got ${String(error)}`);
}

describe('parley acp session/fork', () => {
  it('advertises fork; the fork holds the history so far, goes on alone, and the source is unchanged', async () => {
    const script = join(project, 'script.json');
    await writeFile(
      script,
      JSON.stringify({
        turns: [[{ type: 'text', text: 'First answer.' }], [{ type: 'text', text: 'Answer on the fork.' }]],
      }),
    );
    editor = new Editor(spawnParleyAcp({ cwd: project, env: { PARLEY_SCRIPTED_SCRIPT: script } }));
    const initialized = (await editor.initialize()) as InitializeResponse;
    expect(initialized.agentCapabilities?.sessionCapabilities?.fork).toEqual({});

    const { sessionId } = await editor.agent.request('session/new', { cwd: project, mcpServers: [] });
    await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'First question' }] });

    const fork = await editor.agent.request<ForkSessionResponse>('session/fork', {
      sessionId,
      cwd: project,
      mcpServers: [],
    });
    expect(fork.sessionId).not.toBe(sessionId);
    expect(fork.modes?.currentModeId).toBe('product-analyst');
    // The editor shows the source's history already: nothing is replayed for the fork.
    expect(editor.updatesOf(fork.sessionId)).toEqual([]);
    const { stopReason } = await editor.agent.request('session/prompt', {
      sessionId: fork.sessionId,
      prompt: [{ type: 'text', text: 'Question on the fork' }],
    });
    expect(stopReason).toBe('end_turn');
    expect(agentText(editor.updatesOf(fork.sessionId))).toBe('Answer on the fork.');

    const listed = await editor.agent.request('session/list', { cwd: project });
    expect(listed.sessions.map((session) => session.sessionId).sort()).toEqual([sessionId, fork.sessionId].sort());

    // Loaded again, each replays its own branch: the source never got the fork's exchange.
    const before = editor.updates.length;
    await editor.agent.request('session/load', { sessionId, cwd: project, mcpServers: [] });
    await editor.agent.request('session/load', { sessionId: fork.sessionId, cwd: project, mcpServers: [] });
    const replayed = editor.updates.slice(before);
    const of = (id: string) => replayed.filter((entry) => entry.sessionId === id).map((entry) => entry.update);
    expect(texts(of(sessionId), 'user_message_chunk')).toEqual(['First question']);
    expect(texts(of(fork.sessionId), 'user_message_chunk')).toEqual(['First question', 'Question on the fork']);
    expect(texts(of(fork.sessionId), 'agent_message_chunk')).toEqual(['First answer.', 'Answer on the fork.']);

    const unknown = await errorOf(
      editor.agent.request('session/fork', { sessionId: 'no-such-session', cwd: project, mcpServers: [] }),
    );
    expect(unknown.code).toBe(-32002);
    const relative = await errorOf(editor.agent.request('session/fork', { sessionId, cwd: 'here', mcpServers: [] }));
    expect(relative.code).toBe(-32602);
    expect(JSON.stringify(relative.data)).toContain('cwd: must be an absolute path');
    expect((await editor.agent.request('session/list', { cwd: project })).sessions).toHaveLength(2);
  });
});
