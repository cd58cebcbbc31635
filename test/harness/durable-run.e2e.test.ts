import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunRecord } from '../../src/store/index.js';
import { startFakeOpenAiServer, type FakeOpenAiServer, type FakeOpenAiTurn } from '../fixtures/fake-openai-server.js';

/**
 * Durable runs survive SIGKILL: a process runs the review workflow through the run
 * service on a file data folder and is killed at a step; a fresh process resumes the run, which
 * ends as an uninterrupted run does. The fake OpenAI server counts each agent's answered calls: a
 * call the crash cut off never returned an answer and is made again, but no answered call is ever
 * repeated, and no question is asked twice.
 */

const here = dirname(fileURLToPath(import.meta.url));
const childScript = join(here, 'fixtures', 'durable-run-child.ts');
const projectRoot = join(here, 'fixtures', 'durable-project');

type Line = Record<string, unknown> & { kind: string };

class Child {
  readonly lines: Line[] = [];
  private readonly waiters = new Set<{ predicate: (line: Line) => boolean; resolve: (line: Line) => void }>();
  private stderr = '';
  readonly exited: Promise<unknown>;

  constructor(readonly process: ChildProcessWithoutNullStreams) {
    createInterface({ input: process.stdout }).on('line', (text) => {
      const line = JSON.parse(text) as Line;
      this.lines.push(line);
      for (const waiter of [...this.waiters]) {
        if (waiter.predicate(line)) {
          this.waiters.delete(waiter);
          waiter.resolve(line);
        }
      }
    });
    process.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = once(process, 'exit');
  }

  waitFor(predicate: (line: Line) => boolean): Promise<Line> {
    const seen = this.lines.find(predicate);
    if (seen) return Promise.resolve(seen);
    return Promise.race([
      new Promise<Line>((resolve) => this.waiters.add({ predicate, resolve })),
      this.exited.then(() => {
        throw new Error(`the child exited before the line came; stderr: ${this.stderr}`);
      }),
    ]);
  }

  send(command: unknown): void {
    this.process.stdin.write(`${JSON.stringify(command)}\n`);
  }

  async kill(): Promise<void> {
    this.process.kill('SIGKILL');
    await this.exited;
  }
}

describe('durable runs survive SIGKILL', () => {
  let server: FakeOpenAiServer;
  let dataDir: string;
  const children: Child[] = [];

  beforeEach(async () => {
    server = await startFakeOpenAiServer();
    dataDir = await mkdtemp(join(tmpdir(), 'parley-durable-'));
  });
  afterEach(async () => {
    for (const child of children.splice(0))
      if (child.process.exitCode === null && child.process.signalCode === null) await child.kill();
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  function start(mode: 'start' | 'recover'): Child {
    const child = new Child(
      spawn(process.execPath, ['--import', 'tsx', childScript, dataDir, projectRoot, mode], {
        stdio: 'pipe',
        env: { PATH: process.env['PATH'] ?? '', HOME: dataDir, FAKE_OPENAI_URL: server.url },
      }),
    );
    children.push(child);
    return child;
  }

  const writerReply: FakeOpenAiTurn = { text: 'function sum(a, b) { return a + b; }' };
  const firstReview: FakeOpenAiTurn = { text: 'Needs tests' };
  const secondReview: FakeOpenAiTurn = { text: 'LGTM with tests' };
  const cutOff: FakeOpenAiTurn = { chunks: ['partial '], stall: true };
  const expected = { draft: 'function sum(a, b) { return a + b; }', approved: 'yes', review: 'LGTM with tests' };

  /** Answered and made calls per agent (by the model each agent asks for). */
  function calls(): { answered: Record<string, number>; made: Record<string, number> } {
    const count = (bodies: Array<Record<string, unknown>>): Record<string, number> => {
      const counts: Record<string, number> = {};
      for (const body of bodies) counts[String(body['model'])] = (counts[String(body['model'])] ?? 0) + 1;
      return counts;
    };
    return { answered: count(server.answered()), made: count(server.completions()) };
  }

  async function answerAndFinish(child: Child, runId: string): Promise<RunRecord> {
    const waiting = await child.waitFor((line) => line.kind === 'waiting' && line.runId === runId);
    child.send({ answer: { runId, promptId: waiting['promptId'], response: 'yes' } });
    return (await child.waitFor((line) => line.kind === 'ended')).run as RunRecord;
  }

  it('an uninterrupted run (the result every crashed run must match)', async () => {
    server.enqueue(writerReply, firstReview, secondReview);
    const child = start('start');
    const runId = (await child.waitFor((line) => line.kind === 'started')).runId as string;
    const run = await answerAndFinish(child, runId);
    expect(run).toMatchObject({ status: 'complete', result: expected });
    expect(calls().answered).toEqual({ 'writer-model': 1, 'reviewer-model': 2 });
  }, 60_000);

  it('killed during an agent turn: the cut-off turn runs again, every answered call happens once', async () => {
    server.enqueue(cutOff);
    const first = start('start');
    const runId = (await first.waitFor((line) => line.kind === 'started')).runId as string;
    await first.waitFor((line) => line.kind === 'text' && line.agent === 'writer');
    await first.kill();

    server.enqueue(writerReply, firstReview, secondReview);
    const second = start('recover');
    expect((await second.waitFor((line) => line.kind === 'recovered')).runIds).toEqual([runId]);
    const run = await answerAndFinish(second, runId);
    expect(run).toMatchObject({ status: 'complete', result: expected });
    expect(calls()).toEqual({
      answered: { 'writer-model': 1, 'reviewer-model': 2 },
      made: { 'writer-model': 2, 'reviewer-model': 2 },
    });
  }, 60_000);

  it('killed while waiting for the user: the question is not asked again, no agent is called again', async () => {
    server.enqueue(writerReply, firstReview, secondReview);
    const first = start('start');
    const runId = (await first.waitFor((line) => line.kind === 'started')).runId as string;
    const asked = await first.waitFor((line) => line.kind === 'waiting');
    await first.kill();

    const second = start('recover');
    const again = await second.waitFor((line) => line.kind === 'waiting');
    expect(again['promptId']).toBe(asked['promptId']);
    expect(second.lines.filter((line) => line.kind === 'agent-start')).toEqual([]);
    const run = await answerAndFinish(second, runId);
    expect(run).toMatchObject({ status: 'complete', result: expected });
    expect(calls()).toEqual({
      answered: { 'writer-model': 1, 'reviewer-model': 2 },
      made: { 'writer-model': 1, 'reviewer-model': 2 },
    });
  }, 60_000);

  it('killed during a retry: the failed attempt is not repeated, the cut-off attempt runs again', async () => {
    server.enqueue(writerReply, firstReview, cutOff);
    const first = start('start');
    const runId = (await first.waitFor((line) => line.kind === 'started')).runId as string;
    const waiting = await first.waitFor((line) => line.kind === 'waiting');
    first.send({ answer: { runId, promptId: waiting['promptId'], response: 'yes' } });
    await first.waitFor((line) => line.kind === 'agent-start' && line.agent === 'reviewer' && line.turn === 2);
    await first.waitFor((line) => line.kind === 'text' && line.agent === 'reviewer' && line.delta === 'partial ');
    await first.kill();

    server.enqueue(secondReview);
    const second = start('recover');
    const run = (await second.waitFor((line) => line.kind === 'ended')).run as RunRecord;
    expect(run).toMatchObject({ status: 'complete', result: expected });
    expect(second.lines.filter((line) => line.kind === 'agent-start').map((line) => [line.agent, line.turn])).toEqual([
      ['reviewer', 2],
    ]);
    expect(calls()).toEqual({
      answered: { 'writer-model': 1, 'reviewer-model': 2 },
      made: { 'writer-model': 1, 'reviewer-model': 3 },
    });
  }, 60_000);
});
