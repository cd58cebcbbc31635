/**
 * `parley fork` as a process: a session made with `parley chat` on the scripted back end is forked
 * after its first turn, shown, and continued on `openai-compatible` through the real `openai` client
 * against the local fake server, which must receive the first turn and nothing after it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAiServer, type FakeOpenAiServer } from '../../fixtures/fake-openai-server.js';
import type { StreamEvent } from '../../../src/conversation/index.js';
import { createFileStore } from '../../../src/store/index.js';
import { runParley } from '../../helpers/run-parley.js';

describe.sequential('parley fork', () => {
  let project: string;
  let openai: FakeOpenAiServer;

  beforeAll(async () => {
    project = await mkdtemp(join(tmpdir(), 'parley-fork-cli-'));
    openai = await startFakeOpenAiServer({ models: ['fake-model'] });
  });
  afterAll(async () => {
    await openai.close();
    await rm(project, { recursive: true, force: true });
  });

  it('forks after the first turn, prints the new id, shows its origin, and the fork continues on another back end with only that turn', async () => {
    const first = await runParley(['chat', 'the first question'], { cwd: project });
    expect(first.code).toBe(0);
    const sourceId = /session: (\S+)/.exec(first.stderr)![1]!;
    await runParley(['chat', '--session', sourceId, 'the second question'], { cwd: project });

    // The first turn's events end where the second question starts: fork at the seq before it.
    const secondQuestion = await userMessageEvent(project, sourceId, 'the second question');
    const forked = await runParley(['fork', sourceId, '--at', String(secondQuestion.seq - 1)], { cwd: project });
    expect(forked.stderr).toContain(`forked ${sourceId} at seq ${secondQuestion.seq - 1}`);
    expect(forked.code).toBe(0);
    const forkId = forked.stdout.trim();
    expect(forkId).toMatch(/^[0-9a-f-]{36}$/);

    const shown = await runParley(['show', forkId], { cwd: project });
    expect(shown.stdout).toContain(`forked from ${sourceId} at seq ${secondQuestion.seq - 1}`);
    expect(shown.stdout).toContain('the first question');
    expect(shown.stdout).not.toContain('the second question');

    openai.enqueue({ text: 'an answer on the fork', usage: { prompt_tokens: 40, completion_tokens: 8 } });
    const continued = await runParley(
      [
        'chat',
        '--session',
        forkId,
        '--backend',
        'openai-compatible',
        '--model',
        'fake-model',
        'a different second question',
      ],
      { cwd: project, env: { OPENAI_API_KEY: 'dummy', OPENAI_BASE_URL: openai.url } },
    );
    expect(continued.code).toBe(0);
    expect(continued.stdout).toContain('an answer on the fork');
    const sent = JSON.stringify(openai.completions().at(-1)!['messages']);
    expect(sent).toContain('the first question');
    expect(sent).toContain('a different second question');
    expect(sent).not.toContain('the second question');

    const source = await runParley(['show', sourceId], { cwd: project });
    expect(source.stdout).toContain('the second question');
    expect(source.stdout).not.toContain('a different second question');
    expect(source.stdout).not.toContain('forked from');
  }, 120_000);

  it('refuses an unknown session, a point it does not have, a seq that is not whole and an unknown back end, creating nothing', async () => {
    const listed = async () =>
      (
        JSON.parse((await runParley(['sessions', '--json'], { cwd: project })).stdout) as Array<{ sessionId: string }>
      ).map((session) => session.sessionId);
    const before = await listed();
    const sourceId = before[0];

    const missing = await runParley(['fork', 'no-such-session'], { cwd: project });
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('No session "no-such-session"');
    const beyond = await runParley(['fork', sourceId!, '--at', '100000'], { cwd: project });
    expect(beyond.code).not.toBe(0);
    expect(beyond.stderr).toContain('seq 100000');
    const noBlock = await runParley(['fork', sourceId!, '--at', 'no-such-block'], { cwd: project });
    expect(noBlock.code).not.toBe(0);
    expect(noBlock.stderr).toContain('no-such-block');
    const fraction = await runParley(['fork', sourceId!, '--at', '2.5'], { cwd: project });
    expect(fraction.code).not.toBe(0);
    expect(fraction.stderr).toContain('not a fork point');
    const backend = await runParley(['fork', sourceId!, '--backend', 'telepathy'], { cwd: project });
    expect(backend.code).not.toBe(0);
    expect(backend.stderr).toContain('telepathy');
    expect((await listed()).sort()).toEqual([...before].sort());
  }, 120_000);
});

/** The event that completed the user message `text`, read from the data folder's log once the CLI is done. */
async function userMessageEvent(project: string, sessionId: string, text: string): Promise<StreamEvent> {
  const store = await createFileStore({ dataDir: join(project, '.parley') });
  try {
    for await (const event of store.readLog(sessionId)) {
      if (
        event.type === 'block_complete' &&
        event.block.type === 'user_message' &&
        JSON.stringify(event.block).includes(text)
      )
        return event;
    }
    throw new Error(`no user message "${text}" in ${sessionId}`);
  } finally {
    await store.close();
  }
}
