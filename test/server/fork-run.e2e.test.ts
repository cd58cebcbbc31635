import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, step } from '../../src/backends/index.js';
import { createRunService, defineAgent, defineHarness, type AnyHarness } from '../../src/harness/index.js';
import { RpcError, RpcErrorCode, type ProtocolClient, type RunWire } from '../../src/protocol/index.js';
import { createMemoryRunStore } from '../../src/store/index.js';
import { startTestServer, type TestServer } from './helpers.js';

/**
 * `fork_run` over a real WebSocket, against the real RunService (memory run store, the server's
 * own session manager): the params reach it, the fork comes back, and each refusal keeps its code.
 */

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop();
});

const writer = createScriptedBackend({ defaultTurn: () => [step.text('const a = 1;')] });
const harness = defineHarness({
  name: 'ship',
  agents: { writer: defineAgent({ name: 'Writer', role: 'writes code', backend: writer }) },
  async run(context) {
    const draft = await context.agents.writer.run('Write a.ts');
    const answer = await context.session!.waitForUser(`Ship ${draft}?`, { choices: ['yes', 'no'] });
    return { shipped: answer.choice === 'yes' };
  },
}) as AnyHarness;

async function serve(): Promise<{ server: TestServer; client: ProtocolClient }> {
  const server = await startTestServer({
    createRunService: async ({ manager, projectRoot }) => {
      await mkdir(join(projectRoot, 'workflows'), { recursive: true });
      await writeFile(join(projectRoot, 'workflows', 'ship.ts'), '// loaded through the test loader\n');
      return createRunService({
        runStore: createMemoryRunStore(),
        sessionManager: manager,
        projectRoot,
        loadWorkflow: async () => harness,
      });
    },
  });
  servers.push(server);
  return { server, client: await server.client() };
}

async function until(client: ProtocolClient, runId: string, predicate: (run: RunWire) => boolean): Promise<RunWire> {
  await client.subscribeRuns([runId]);
  return new Promise((resolve, reject) => {
    const off = client.on('run_updated', ({ run }) => {
      if (run.id === runId && predicate(run)) {
        off();
        resolve(run);
      }
    });
    client.getRun(runId).then((run) => {
      if (predicate(run)) {
        off();
        resolve(run);
      }
    }, reject);
  });
}

async function errorOf(promise: Promise<unknown>): Promise<RpcError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (error instanceof RpcError) return error;
  throw new Error(`expected an RpcError, got ${String(error)}`);
}

describe('fork_run over a WebSocket', () => {
  it('forks a finished run at its question with another answer: the fork says where it came from and ends its own way', async () => {
    const { client } = await serve();
    const source = await client.startRun({ workflow: 'workflows/ship.ts' });
    const waiting = await until(client, source.id, (run) => run.pendingPrompts.length > 0);
    expect((await client.answerPrompt(source.id, waiting.pendingPrompts[0]!.promptId, 'yes')).accepted).toBe(true);
    const done = await until(client, source.id, (run) => run.status === 'complete');
    expect(done.result).toEqual({ shipped: true });

    // session, turn-start, turn, prompt, reply: the answer is step 4.
    const fork = await client.forkRun(source.id, { atStep: 4, answer: 'no' });
    expect(fork).toMatchObject({ harness: 'ship', forkedFrom: { runId: source.id, step: 4, answer: 'no' } });
    expect((await until(client, fork.id, (run) => run.status === 'complete')).result).toEqual({ shipped: false });
    expect(writer.calls).toHaveLength(1);
    expect(await client.getRun(source.id)).toEqual(done);

    const unknown = await errorOf(client.forkRun('run-404', { atStep: 0 }));
    expect([unknown.code, unknown.reason]).toEqual([RpcErrorCode.NOT_FOUND, 'RUN_NOT_FOUND']);
    const step = await errorOf(client.forkRun(source.id, { atStep: 9 }));
    expect([step.code, step.reason]).toEqual([RpcErrorCode.NOT_FOUND, 'RUN_STEP_NOT_FOUND']);
    expect(step.message).toContain('steps 0 to 4');
    const noQuestion = await errorOf(client.forkRun(source.id, { atStep: 1, answer: 'no' }));
    expect([noQuestion.code, noQuestion.reason]).toEqual([RpcErrorCode.INVALID_PARAMS, 'NOT_A_QUESTION']);
    const refused = await errorOf(client.forkRun(source.id, { atStep: 3, answer: 'perhaps' }));
    expect([refused.code, refused.reason]).toEqual([RpcErrorCode.INVALID_PARAMS, 'ANSWER_REFUSED']);
    const negative = await errorOf(client.request('fork_run', { runId: source.id, atStep: -1 }));
    expect(negative.code).toBe(RpcErrorCode.INVALID_PARAMS);
    expect((await client.listRuns()).map((run) => run.id)).toEqual([fork.id, source.id]);
  });
});
