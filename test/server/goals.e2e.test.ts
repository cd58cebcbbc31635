import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, step } from '../../src/backends/index.js';
import { RpcError, type GoalStatus } from '../../src/protocol/index.js';
import { gate, startTestServer, type TestServer } from './helpers.js';

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop();
});

async function rpcError(promise: Promise<unknown>): Promise<RpcError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(RpcError);
  return error as RpcError;
}

describe('goals over a WebSocket', () => {
  it('set_goal runs turns until the judge command passes; goal_status and get_goal show it; bad input is -32602', async () => {
    const backend = createScriptedBackend();
    const server = await startTestServer({ backend });
    servers.push(server);
    backend.enqueue([step.text('first try')], async () => {
      await writeFile(join(server.root, 'done.txt'), 'ok');
      return [step.text('done')];
    });
    const client = await server.client();
    await client.request('draft', { role: 'dev', project: server.project, task: 'first-task' });
    const bad = await rpcError(client.request('set_goal', { condition: 'x', budget: { turns: 0 } }));
    expect(bad.code).toBe(-32602);
    const seen: GoalStatus[] = [];
    const ended = new Promise<GoalStatus>((resolve) =>
      client.on('goal_status', ({ goal }) => {
        seen.push(goal);
        if (goal.state === 'ended') resolve(goal);
      }),
    );
    const { goal } = await client.request('set_goal', {
      condition: 'done.txt exists',
      judge: { kind: 'command', command: 'test -f done.txt' },
      budget: { turns: 3 },
    });
    expect(goal).toMatchObject({ state: 'running', budget: { turns: 3 } });
    expect(await ended).toMatchObject({ ended: { reason: 'met' }, used: { turns: 2 } });
    expect(seen.map((entry) => entry.judgements.length)).toEqual([0, 1, 2, 2]);
    expect((await client.request('get_goal', {})).goal).toMatchObject({ ended: { reason: 'met' } });
    expect((await client.request('get_draft_status', {})).session?.goal).toMatchObject({ state: 'ended' });
    expect((await rpcError(client.request('stop_goal', {}))).code).toBe(-32001);
  });

  it('a goal cut by a restart goes on when the server starts again', async () => {
    const never = gate();
    const backend = createScriptedBackend({ turns: [[step.text('started'), step.wait(never.promise)]] });
    const server = await startTestServer({ backend });
    servers.push(server);
    const client = await server.client({ channel: 'goal-channel' });
    await client.request('draft', { role: 'dev', project: server.project, task: 'first-task' });
    await writeFile(join(server.root, 'done.txt'), 'ok');
    await client.request('set_goal', {
      condition: 'done.txt exists',
      judge: { kind: 'command', command: 'test -f done.txt' },
      budget: { turns: 2 },
    });
    while (backend.calls.length === 0) await new Promise((resolve) => setImmediate(resolve));
    await server.restart();
    const again = await server.client({ channel: 'goal-channel' });
    const goal = await server.server.drafts.goalSettled({ channelId: 'goal-channel' });
    expect(goal).toMatchObject({ ended: { reason: 'met' }, used: { turns: 1 } });
    expect((await again.request('get_goal', {})).goal).toMatchObject({ ended: { reason: 'met' } });
  });
});
