import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProtocolClient } from '../../src/protocol/index.js';
import { startFakeOpenAiServer, type FakeOpenAiServer } from '../fixtures/fake-openai-server.js';
import { connectToServer, startServeProcess, type ServeProcess } from '../server/serve-process.js';

/**
 * Durable runs end to end: examples/code-review.ts's workflow waits for a person's approval;
 * `parley serve` is SIGKILLed while it waits; after a restart a second client, on another channel,
 * answers over the protocol, and the run completes with the uninterrupted result. The fake model
 * server counts each agent's answered calls: exactly one each (the reviewer's first answer is a
 * retry's failed attempt, so it has two).
 */
const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

/** A project holding the durable-review workflow, importing Parley from this checkout. */
async function reviewProject(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'parley-durable-serve-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  const source = await readFile(join(here, 'fixtures', 'durable-project', 'workflows', 'review.ts'), 'utf8');
  await mkdir(join(root, 'workflows'));
  await writeFile(
    join(root, 'workflows', 'review.ts'),
    source.replace("'../../../../../src/index.js'", `'${pathToFileURL(join(repo, 'src', 'index.ts')).href}'`),
  );
  await writeFile(join(root, 'parley.config.json'), JSON.stringify({ workflows: { review: 'workflows/review.ts' } }));
  return root;
}

async function serve(root: string, models: FakeOpenAiServer): Promise<ServeProcess> {
  const server = await startServeProcess(root, { FAKE_OPENAI_URL: models.url });
  cleanups.push(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    await server.exited;
  });
  return server;
}

async function client(server: ServeProcess, channel: string): Promise<ProtocolClient> {
  const connected = await connectToServer(server.info, channel);
  cleanups.push(async () => connected.close());
  return connected;
}

/** Polls get_run (a notification could be missed across the restart) until `done` holds. */
async function runUntil(
  connected: ProtocolClient,
  runId: string,
  done: (run: Awaited<ReturnType<ProtocolClient['getRun']>>) => boolean,
) {
  for (;;) {
    const run = await connected.getRun(runId);
    if (done(run)) return run;
    await new Promise((next) => setTimeout(next, 50));
  }
}

function answeredCalls(models: FakeOpenAiServer): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const body of models.answered()) counts[String(body['model'])] = (counts[String(body['model'])] ?? 0) + 1;
  return counts;
}

describe('a durable run across a SIGKILL of parley serve', () => {
  it('is answered by another client after the restart and completes as an uninterrupted run would, each agent called once', async () => {
    const models = await startFakeOpenAiServer();
    cleanups.push(() => models.close());
    models.enqueue(
      { text: 'function sum(a, b) { return a + b; }' },
      { text: 'Needs tests' },
      { text: 'LGTM with tests' },
    );
    const root = await reviewProject();

    const first = await serve(root, models);
    const starter = await client(first, 'starter');
    const started = await starter.startRun({ workflow: 'review', input: { file: 'sum.js' } });
    const waiting = await runUntil(starter, started.id, (run) => run.status === 'waiting');
    const promptId = waiting.pendingPrompts[0]!.promptId;
    expect(waiting.pendingPrompts[0]).toMatchObject({ prompt: 'Ship sum.js?', choices: ['yes', 'no'] });
    first.child.kill('SIGKILL');
    await first.exited;

    const second = await serve(root, models);
    const answerer = await client(second, 'answerer');
    const resumed = await runUntil(answerer, started.id, (run) => run.status === 'waiting');
    expect(resumed.pendingPrompts.map((prompt) => prompt.promptId)).toEqual([promptId]);
    await expect(answerer.answerPrompt(started.id, promptId, 'maybe')).resolves.toMatchObject({ accepted: false });
    await expect(answerer.answerPrompt(started.id, promptId, 'yes')).resolves.toMatchObject({ accepted: true });
    await expect(answerer.answerPrompt(started.id, promptId, 'yes')).rejects.toThrow(/already/i);
    const done = await runUntil(answerer, started.id, (run) => run.status === 'complete' || run.status === 'failed');
    expect(done).toMatchObject({
      status: 'complete',
      result: { draft: 'function sum(a, b) { return a + b; }', approved: 'yes', review: 'LGTM with tests' },
    });
    expect(answeredCalls(models)).toEqual({ 'writer-model': 1, 'reviewer-model': 2 });
  }, 120_000);
});
