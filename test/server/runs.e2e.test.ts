import { afterEach, describe, expect, it } from 'vitest';
import {
  RpcError,
  RpcErrorCode,
  type NotificationName,
  type NotificationParams,
  type ProtocolClient,
} from '../../src/protocol/index.js';
import { CODE_REVIEW, RELEASE_NOTES, StandInRunService } from '../helpers/stand-in-run-service.js';
import { startTestServer, type TestServer } from './helpers.js';

/**
 * The run methods and notifications over real WebSocket connections, against a server
 * whose RunService is the in-memory stand-in for the core (test/helpers/stand-in-run-service.ts):
 * what is tested here is the face (params, results, error codes, fan-out), not the core.
 */

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop();
});

async function serve(runService?: StandInRunService): Promise<TestServer> {
  const server = await startTestServer(runService ? { runService } : {});
  servers.push(server);
  return server;
}

async function errorOf(promise: Promise<unknown>): Promise<RpcError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof RpcError) return error;
    throw error;
  }
  throw new Error('expected the request to fail');
}

/** Every notification of the given names a client receives, in order. */
function record(client: ProtocolClient, names: NotificationName[]): Array<{ name: string; params: unknown }> {
  const seen: Array<{ name: string; params: unknown }> = [];
  for (const name of names) client.on(name, (params) => seen.push({ name, params }));
  return seen;
}

function next<N extends NotificationName>(
  client: ProtocolClient,
  name: N,
  matches: (params: NotificationParams<N>) => boolean = () => true,
): Promise<NotificationParams<N>> {
  return new Promise((resolve) => {
    const off = client.on(name, (params) => {
      if (!matches(params)) return;
      off();
      resolve(params);
    });
  });
}

describe('run methods on a server without a run service', () => {
  it('answer RUNS_NOT_ENABLED (-32007) with a message that says why, for every run method', async () => {
    const server = await serve();
    const client = await server.client();
    const listing = await errorOf(client.listRuns());
    expect(listing.code).toBe(RpcErrorCode.UNSUPPORTED);
    expect(listing.reason).toBe('RUNS_NOT_ENABLED');
    expect(listing.message).toContain('Durable runs are not enabled on this server');
    expect((await errorOf(client.startRun({ workflow: 'review.ts' }))).reason).toBe('RUNS_NOT_ENABLED');
    expect((await errorOf(client.answerPrompt('run-1', 'p', 'yes'))).reason).toBe('RUNS_NOT_ENABLED');
    expect((await errorOf(client.subscribeRuns())).reason).toBe('RUNS_NOT_ENABLED');
    // The rest of the server works as before.
    expect((await client.request('list_projects')).projects.length).toBeGreaterThan(0);
  });
});

describe('run methods over a RunService', () => {
  it("start_run stores a run in the server's project; list_runs and get_run return it; an unknown run is RUN_NOT_FOUND", async () => {
    const runs = new StandInRunService({ 'reviews/code-review.ts': CODE_REVIEW });
    const server = await serve(runs);
    const client = await server.client();
    const started = await client.startRun({ workflow: 'reviews/code-review.ts', input: { diff: '+1' } });
    expect(started).toMatchObject({
      harness: 'code-review',
      status: 'waiting',
      project: server.project,
      input: { diff: '+1' },
      phases: ['review', 'approval'],
    });
    expect(started.pendingPrompts).toEqual([
      expect.objectContaining({ prompt: 'Apply the suggested fixes?', choices: ['approve', 'reject'] }),
    ]);
    expect(runs.calls[0]).toEqual({
      method: 'startRun',
      args: [{ workflow: 'reviews/code-review.ts', input: { diff: '+1' }, project: server.project }],
    });

    expect(await client.listRuns()).toEqual([started]);
    expect(await client.listRuns({ status: ['complete'] })).toEqual([]);
    expect(await client.getRun(started.id)).toEqual(started);

    const missing = await errorOf(client.getRun('run-404'));
    expect(missing.code).toBe(RpcErrorCode.NOT_FOUND);
    expect(missing.reason).toBe('RUN_NOT_FOUND');
    expect(missing.message).toContain('run-404');
  });

  it('list_runs passes its filter on and keeps at most `limit`', async () => {
    const runs = new StandInRunService({ a: CODE_REVIEW });
    const server = await serve(runs);
    const client = await server.client();
    for (let index = 0; index < 3; index++) await client.startRun({ workflow: 'a', project: 'elsewhere' });
    expect(await client.listRuns({ project: 'elsewhere', limit: 2 })).toHaveLength(2);
    expect(await client.listRuns({ project: server.project })).toEqual([]);
    expect(runs.calls.at(-1)).toEqual({ method: 'listRuns', args: [{ project: server.project }] });
  });

  it('bad params are -32602 naming the field, and reach no run service', async () => {
    const runs = new StandInRunService({});
    const server = await serve(runs);
    const client = await server.client();
    const noWorkflow = await errorOf(client.request('start_run', {} as never));
    expect(noWorkflow.code).toBe(RpcErrorCode.INVALID_PARAMS);
    expect(noWorkflow.data.issues).toEqual([expect.stringContaining('workflow')]);
    const badId = await errorOf(client.request('get_run', { runId: '../etc' }));
    expect(badId.code).toBe(RpcErrorCode.INVALID_PARAMS);
    expect(
      (await errorOf(client.request('answer_prompt', { runId: 'r', promptId: 'p' } as never))).data.issues,
    ).toEqual([expect.stringContaining('response')]);
    expect(runs.calls).toEqual([]);
  });

  it('an answer the choices refuse gets the message back and the prompt keeps waiting; the accepted one completes the run; a second is PROMPT_ALREADY_ANSWERED', async () => {
    const server = await serve(new StandInRunService({ review: CODE_REVIEW }));
    const client = await server.client();
    const run = await client.startRun({ workflow: 'review' });
    const promptId = run.pendingPrompts[0]!.promptId;

    const refused = await client.answerPrompt(run.id, promptId, 'maybe');
    expect(refused).toEqual({
      accepted: false,
      message: '"maybe" is not one of the choices: approve, reject (or their numbers).',
    });
    expect((await client.getRun(run.id)).pendingPrompts.map((prompt) => prompt.promptId)).toEqual([promptId]);

    expect(await client.answerPrompt(run.id, promptId, '1')).toEqual({ accepted: true });
    expect(await client.getRun(run.id)).toMatchObject({
      status: 'complete',
      pendingPrompts: [],
      result: { approved: true },
    });

    const twice = await errorOf(client.answerPrompt(run.id, promptId, 'reject'));
    expect(twice.code).toBe(RpcErrorCode.INVALID_STATE);
    expect(twice.reason).toBe('PROMPT_ALREADY_ANSWERED');
    expect(twice.message).toContain('already answered');

    const unknown = await errorOf(client.answerPrompt(run.id, 'no-such-prompt', 'x'));
    expect(unknown.code).toBe(RpcErrorCode.NOT_FOUND);
    expect(unknown.reason).toBe('UNKNOWN_PROMPT');
  });

  it("a free-text answer the validator refuses gets the validator's message", async () => {
    const server = await serve(new StandInRunService({ notes: RELEASE_NOTES }));
    const client = await server.client();
    const run = await client.startRun({ workflow: 'notes' });
    const promptId = run.pendingPrompts[0]!.promptId;
    expect(await client.answerPrompt(run.id, promptId, 'soon')).toEqual({
      accepted: false,
      message: '"soon" is not a version like 1.2.3.',
    });
    expect(await client.answerPrompt(run.id, promptId, '2.0.1')).toEqual({ accepted: true });
    expect((await client.getRun(run.id)).result).toEqual({ version: '2.0.1' });
  });

  it('send_to_run, pause_run, resume_run and abort_run reach the service with their params', async () => {
    const runs = new StandInRunService({ review: CODE_REVIEW });
    const server = await serve(runs);
    const client = await server.client();
    const run = await client.startRun({ workflow: 'review' });
    await client.sendToRun(run.id, 'look at the tests too', 'reviewer');
    await client.sendToRun(run.id, 'and the docs');
    expect((await client.pauseRun(run.id)).status).toBe('paused');
    expect((await client.resumeRun(run.id)).status).toBe('waiting');
    expect(await client.abortRun(run.id, 'not needed')).toMatchObject({ status: 'aborted', pendingPrompts: [] });
    expect(runs.calls.slice(1)).toEqual([
      { method: 'sendToRun', args: [run.id, 'look at the tests too', { agent: 'reviewer' }] },
      { method: 'sendToRun', args: [run.id, 'and the docs', {}] },
      { method: 'pauseRun', args: [run.id] },
      { method: 'resumeRun', args: [run.id] },
      { method: 'abortRun', args: [run.id, 'not needed'] },
    ]);
    expect((await errorOf(client.sendToRun('run-404', 'hello'))).reason).toBe('RUN_NOT_FOUND');
  });
});

describe('run notifications', () => {
  it('reach a second client that follows every run: the prompt, the event (timestamp as ISO 8601) and each update, in order', async () => {
    const server = await serve(new StandInRunService({ review: CODE_REVIEW }));
    const starter = await server.client();
    const watcher = await server.client();
    expect(await watcher.subscribeRuns(undefined, { events: true })).toEqual({ all: true, runIds: [], events: true });
    const seen = record(watcher, ['run_updated', 'run_prompt', 'run_event']);
    const completed = next(watcher, 'run_updated', (params) => params.run.status === 'complete');

    const run = await starter.startRun({ workflow: 'review' });
    await watcher.answerPrompt(run.id, run.pendingPrompts[0]!.promptId, 'approve');
    await completed;

    expect(seen.map((entry) => entry.name)).toEqual(['run_event', 'run_prompt', 'run_updated', 'run_updated']);
    const event = seen[0]!.params as NotificationParams<'run_event'>;
    expect(event).toMatchObject({ runId: run.id, event: { type: 'harness:start', harness: 'code-review' } });
    expect(new Date(event.event.timestamp).toISOString()).toBe(event.event.timestamp);
    expect(seen[1]!.params).toEqual({ runId: run.id, prompt: run.pendingPrompts[0] });
    expect((seen[3]!.params as NotificationParams<'run_updated'>).run).toMatchObject({
      id: run.id,
      status: 'complete',
      result: { approved: true },
    });
  });

  it('run_event goes only to followers that asked for events; the others get the prompt and the updates alone', async () => {
    const server = await serve(new StandInRunService({ review: CODE_REVIEW }));
    const quiet = await server.client();
    await quiet.subscribeRuns();
    const seen = record(quiet, ['run_updated', 'run_prompt', 'run_event']);
    const updated = next(quiet, 'run_updated');
    await (await server.client()).startRun({ workflow: 'review' });
    await updated;
    // The stand-in announces the run's event first: had it been sent here, it would have come first.
    expect(seen.map((entry) => entry.name)).toEqual(['run_prompt', 'run_updated']);
  });

  it('go only to connections that follow the run: by id, or all; never to others', async () => {
    const server = await serve(new StandInRunService({ review: CODE_REVIEW }));
    const client = await server.client();
    const first = await client.startRun({ workflow: 'review' });
    const second = await client.startRun({ workflow: 'review' });

    const followsFirst = await server.client();
    expect(await followsFirst.subscribeRuns([first.id])).toEqual({ all: false, runIds: [first.id], events: false });
    const followsNothing = await server.client();
    await followsNothing.subscribeRuns([second.id]);
    expect(await followsNothing.unsubscribeRuns()).toEqual({ all: false, runIds: [], events: false });
    const firstSeen = record(followsFirst, ['run_updated']);
    const nothingSeen = record(followsNothing, ['run_updated', 'run_prompt', 'run_event']);

    const firstUpdated = next(followsFirst, 'run_updated', (params) => params.run.id === first.id);
    await client.pauseRun(second.id);
    await client.pauseRun(first.id);
    // Notifications on one socket arrive in the order they were sent: the first run's update
    // coming means the second run's (sent before it) would have come first.
    await firstUpdated;
    expect(firstSeen.map((entry) => (entry.params as NotificationParams<'run_updated'>).run.id)).toEqual([first.id]);

    await followsNothing.subscribeRuns([first.id]);
    const firstResumed = next(followsNothing, 'run_updated', (params) => params.run.id === first.id);
    await client.resumeRun(second.id);
    await client.resumeRun(first.id);
    await firstResumed;
    expect(nothingSeen.map((entry) => (entry.params as NotificationParams<'run_updated'>).run.id)).toEqual([first.id]);
  });

  it('a client that reconnects follows its runs again without asking', async () => {
    const runs = new StandInRunService({ review: CODE_REVIEW });
    const server = await serve(runs);
    const watcher = await server.client();
    await watcher.subscribeRuns();
    await server.restart({ runService: runs });
    await new Promise<void>((resolve) => {
      if (watcher.state === 'connected') resolve();
      const off = watcher.onStateChange((state) => {
        if (state !== 'connected') return;
        off();
        resolve();
      });
    });
    const prompted = next(watcher, 'run_prompt');
    const starter = await server.client();
    const run = await starter.startRun({ workflow: 'review' });
    expect((await prompted).runId).toBe(run.id);
  });

  it('a server that made its run service with the factory closes it on close; one it was given it leaves open', async () => {
    const made = new StandInRunService({});
    const server = await startTestServer({
      createRunService: (context) => {
        expect(context.projectRoot).toBeTruthy();
        expect(context.manager).toBeDefined();
        return Promise.resolve(made);
      },
    });
    expect(server.server.runService).toBe(made);
    await server.stop();
    expect(made.closed).toBe(true);

    const given = new StandInRunService({});
    const other = await serve(given);
    await other.server.close();
    expect(given.closed).toBe(false);
  });
});
