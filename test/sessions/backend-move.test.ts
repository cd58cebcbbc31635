import { afterEach, describe, expect, it } from 'vitest';
import {
  createScriptedBackend,
  parseClaudeCodeTranscript,
  step,
  writeClaudeCodeTranscript,
  type AgentBackend,
  type ExecuteRequest,
  type ScriptedBackend,
} from '../../src/backends/index.js';
import type { StreamEvent, UnsequencedEvent, SystemBlock } from '../../src/conversation/index.js';
import {
  BACKEND_MOVED,
  continueOnBackend,
  createSessionManager,
  NATIVE_RESUME_MANAGED,
  NATIVE_RESUME_RETRY,
  runTurn,
  runTurnWithFallback,
  type SessionManager,
} from '../../src/sessions/index.js';
import { createMemoryStore, type SessionStore } from '../../src/store/index.js';

const managers: SessionManager[] = [];
afterEach(async () => {
  await Promise.all(managers.splice(0).map((manager) => manager.close()));
});

async function drain(events: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const all: StreamEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

/**
 * A native back end for the ladder: it writes Claude Code transcripts, keeps the ones put in place
 * in `files`, and fails to resume a session it has no file for (or any session while `failResumes`
 * is above zero), the way the CLIs do. Its turns are the scripted back end's.
 */
function nativeBackend(scripted: ScriptedBackend, files = new Map<string, string>()) {
  const state = { failResumes: 0, requests: [] as ExecuteRequest[] };
  const backend: AgentBackend = {
    describe: () => ({ ...scripted.describe(), name: 'fake-native', continuity: 'native' }),
    writeSessionTranscripts: writeClaudeCodeTranscript,
    setupSessionTranscripts: (nativeSessionId, transcripts) => {
      files.set(nativeSessionId, transcripts.main);
      return Promise.resolve();
    },
    execute(request) {
      state.requests.push(request);
      const nativeSessionId = request.nativeSessionId ?? request.sessionId;
      const resume = request.isNewSession === false;
      if (resume && (!files.has(nativeSessionId) || state.failResumes > 0)) {
        state.failResumes--;
        return createScriptedBackend({
          name: 'fake-native',
          turns: [
            [step.error(`No conversation found with session ID: ${nativeSessionId}`, { code: 'NATIVE_RESUME_FAILED' })],
          ],
        }).execute(request);
      }
      const turn = scripted.execute(request);
      async function* events(): AsyncGenerator<UnsequencedEvent> {
        for await (const event of turn.events) {
          yield event.type === 'metadata_update' && event.metadata.turnComplete
            ? { ...event, metadata: { ...event.metadata, nativeSessionId } }
            : event;
        }
      }
      return { events: events() };
    },
  };
  return { backend, files, state };
}

async function sessionOnScripted(store: SessionStore = createMemoryStore()) {
  const manager = await createSessionManager({ store });
  managers.push(manager);
  const { sessionId } = await manager.createSession({
    scope: { kind: 'draft', role: 'dev' },
    agentType: 'dev',
    backend: 'scripted',
  });
  const scripted = createScriptedBackend({
    turns: [
      [step.thinking('Plan: look first.'), step.tool('Bash', { command: 'ls' }, 'a.txt'), step.text('One file.')],
      [step.tool('run_command', { command: 'pwd' }, '/work'), step.text('In /work.')],
    ],
  });
  await drain((await runTurn(manager, sessionId, { backend: scripted, prompt: 'What is here?' })).events);
  await drain((await runTurn(manager, sessionId, { backend: scripted, prompt: 'Where am I?' })).events);
  return { manager, sessionId, store };
}

const systemBlocks = (events: readonly StreamEvent[]) =>
  events.flatMap((event) =>
    event.type === 'block_complete' && event.block.type === 'system' ? [event.block as SystemBlock] : [],
  );
const codeOf = (block: SystemBlock) => (block.data as { code?: string } | undefined)?.code;

describe('continueOnBackend', () => {
  it('writes the history as the native back end’s transcript, keeps it with the session, links it, and says what was converted', async () => {
    const { manager, sessionId, store } = await sessionOnScripted();
    const target = nativeBackend(createScriptedBackend({ name: 'fake-native' }));
    const move = await continueOnBackend(manager, sessionId, target.backend, { cwd: '/work' });
    expect(move).toMatchObject({ from: 'scripted', to: 'fake-native', mode: 'native' });
    const session = await manager.getSession(sessionId);
    expect(session.type).toBe('fake-native');
    expect(session.native).toMatchObject({ backend: 'fake-native', nativeSessionId: move.nativeSessionId });
    const written = target.files.get(move.nativeSessionId!)!;
    // Kept with the session as its transcript.
    expect(move.transcript).toBe(`native-fake-native-${move.nativeSessionId}`);
    expect(await store.readTranscript(sessionId, move.transcript!)).toBe(written);
    const parsed = parseClaudeCodeTranscript(written);
    expect(
      parsed.blocks
        .filter((block) => block.type === 'user_message')
        .map((block) => (block.type === 'user_message' ? block.content : '')),
    ).toEqual(['What is here?', 'Where am I?']);
    expect(parsed.blocks.find((block) => block.type === 'tool_use')).toMatchObject({ name: 'Bash' });
    expect(move.conversions).toEqual([
      { kind: 'thinking', count: 1 },
      { kind: 'tool_call', count: 1, names: ['run_command'] },
    ]);
    const notice = (await manager.loadConversation(sessionId)).blocks.at(-1)!;
    expect(notice).toMatchObject({
      type: 'system',
      subtype: 'info',
      data: { code: BACKEND_MOVED, from: 'scripted', to: 'fake-native', mode: 'native' },
    });
    expect(notice.type === 'system' && notice.content).toContain('1 thinking block to marked text');

    // The next turn resumes that native session; the move is not made twice.
    const turn = await runTurnWithFallback(manager, sessionId, { backend: target.backend, prompt: 'Next?' });
    await drain(turn.events);
    expect(target.state.requests.at(-1)).toMatchObject({ nativeSessionId: move.nativeSessionId, isNewSession: false });
    expect((await continueOnBackend(manager, sessionId, target.backend, { cwd: '/work' })).mode).toBe('unchanged');
  });

  it('a move to a managed back end links no native session and says Parley builds each request', async () => {
    const { manager, sessionId } = await sessionOnScripted();
    const target = nativeBackend(createScriptedBackend({ name: 'fake-native' }));
    const native = await continueOnBackend(manager, sessionId, target.backend, { cwd: '/work' });
    const managed = createScriptedBackend({ name: 'other-managed' });
    const move = await continueOnBackend(manager, sessionId, managed, { cwd: '/work' });
    expect(move).toMatchObject({ from: 'fake-native', to: 'other-managed', mode: 'managed' });
    const session = await manager.getSession(sessionId);
    expect(session.native).toBeUndefined();
    expect(session.type).toBe('other-managed');
    await drain((await runTurnWithFallback(manager, sessionId, { backend: managed, prompt: 'And now?' })).events);
    // The managed request holds the earlier user messages.
    expect(managed.calls[0]!.systemPrompt).toContain('What is here?');
    expect(managed.calls[0]!.systemPrompt).toContain('Where am I?');
    expect(native.mode).toBe('native');
  });

  it('an unknown session is SESSION_NOT_FOUND and nothing is written', async () => {
    const manager = await createSessionManager({ store: createMemoryStore() });
    managers.push(manager);
    const target = nativeBackend(createScriptedBackend({ name: 'fake-native' }));
    await expect(continueOnBackend(manager, 'missing', target.backend, { cwd: '/work' })).rejects.toMatchObject({
      code: 'SESSION_NOT_FOUND',
    });
    expect(target.files.size).toBe(0);
  });
});

describe('the fallback ladder', () => {
  it('a native resume that fails: the transcript is written again from the log, the turn retried once, and the user told', async () => {
    const { manager, sessionId } = await sessionOnScripted();
    const target = nativeBackend(createScriptedBackend({ name: 'fake-native', turns: [[step.text('Resumed fine.')]] }));
    const move = await continueOnBackend(manager, sessionId, target.backend, { cwd: '/work' });
    target.files.clear(); // the CLI's storage was wiped
    const events = await drain(
      (await runTurnWithFallback(manager, sessionId, { backend: target.backend, prompt: 'Still there?', cwd: '/work' }))
        .events,
    );
    const notices = systemBlocks(events);
    expect(notices.map(codeOf)).toEqual(['NATIVE_RESUME_FAILED', NATIVE_RESUME_RETRY]);
    expect(notices[1]!.content).toContain('writes the session');
    expect(
      events.some(
        (event) =>
          event.type === 'text_delta' || (event.type === 'block_complete' && event.block.type === 'assistant_text'),
      ),
    ).toBe(true);
    // Rewritten under the same native id, without the prompt being retried (the back end gets it as the prompt).
    const rewritten = target.files.get(move.nativeSessionId!)!;
    expect(rewritten).toContain('Where am I?');
    expect(rewritten).not.toContain('Still there?');
    const conversation = await manager.loadConversation(sessionId);
    expect(
      conversation.blocks.filter((block) => block.type === 'user_message' && block.content === 'Still there?'),
    ).toHaveLength(1);
    expect(conversation.blocks.at(-1)).toMatchObject({ type: 'assistant_text', content: 'Resumed fine.' });
  });

  it('when the retry fails too the turn runs managed, on a new native session built from the log, and the user is told', async () => {
    const { manager, sessionId } = await sessionOnScripted();
    const scripted = createScriptedBackend({ name: 'fake-native', turns: [[step.text('Managed answer.')]] });
    const target = nativeBackend(scripted);
    const move = await continueOnBackend(manager, sessionId, target.backend, { cwd: '/work' });
    target.state.failResumes = 2;
    const events = await drain(
      (await runTurnWithFallback(manager, sessionId, { backend: target.backend, prompt: 'Anyone?', cwd: '/work' }))
        .events,
    );
    expect(systemBlocks(events).map(codeOf)).toEqual([
      'NATIVE_RESUME_FAILED',
      NATIVE_RESUME_RETRY,
      'NATIVE_RESUME_FAILED',
      NATIVE_RESUME_MANAGED,
    ]);
    const last = target.state.requests.at(-1)!;
    expect(last.isNewSession).toBe(true);
    expect(last.nativeSessionId).not.toBe(move.nativeSessionId);
    expect(last.systemPrompt).toContain('What is here?');
    expect(last.systemPrompt).toContain('Where am I?');
    const session = await manager.getSession(sessionId);
    expect(session.native?.nativeSessionId).toBe(last.nativeSessionId);
    const conversation = await manager.loadConversation(sessionId);
    expect(conversation.blocks.at(-1)).toMatchObject({ type: 'assistant_text', content: 'Managed answer.' });
    expect(
      conversation.blocks.filter((block) => block.type === 'user_message' && block.content === 'Anyone?'),
    ).toHaveLength(1);
  });

  it('a turn that resumes fine climbs nothing', async () => {
    const { manager, sessionId } = await sessionOnScripted();
    const target = nativeBackend(createScriptedBackend({ name: 'fake-native', turns: [[step.text('Fine.')]] }));
    await continueOnBackend(manager, sessionId, target.backend, { cwd: '/work' });
    const events = await drain(
      (await runTurnWithFallback(manager, sessionId, { backend: target.backend, prompt: 'ok?' })).events,
    );
    expect(systemBlocks(events)).toEqual([]);
    expect(target.state.requests).toHaveLength(1);
  });
});
