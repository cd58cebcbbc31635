/**
 * Goals through the CLI and across a crash, on real `parley serve` processes with the scripted back
 * end: `parley goal … --wait` follows a goal judged by a command until it is met and exits 0;
 * `--status --json` shows it; a budget of zero is refused and changes nothing. A server SIGKILLed
 * mid-goal is started again and the goal goes on from its log until its budget ends it.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { GoalStatus, ProtocolClient, ServerFile } from '../../src/protocol/index.js';
import { runParley } from '../helpers/run-parley.js';
import { connectToServer, startServeProcess, type ServeProcess } from '../server/serve-process.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function project(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'parley-goal-cli-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  return root;
}

async function serve(root: string, script: unknown): Promise<ServeProcess> {
  const path = join(root, `script-${cleanups.length}.json`);
  await writeFile(path, JSON.stringify(script));
  const server = await startServeProcess(root, { PARLEY_SCRIPTED_SCRIPT: path });
  cleanups.push(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    await server.exited;
  });
  return server;
}

async function connect(info: ServerFile, channel: string): Promise<ProtocolClient> {
  const client = await connectToServer(info, channel);
  cleanups.push(() => Promise.resolve(client.close()));
  return client;
}

async function drafted(client: ProtocolClient): Promise<string> {
  const projectName = (await client.request('list_projects')).projects.find((entry) => entry.current)!.name;
  await client.request('create_task', { project: projectName, title: 'Goal test', slug: 'goal-test' });
  return (await client.request('draft', { role: 'dev', project: projectName, task: 'goal-test' })).sessionId;
}

/** A judge command that fails its first `n - 1` runs and passes the `n`th (it counts in a file of the project). */
function passesOnRun(n: number): string {
  return `n=$(cat judge-runs 2>/dev/null || echo 0); n=$((n+1)); echo $n > judge-runs; echo "judged $n times"; [ $n -ge ${n} ]`;
}

describe('parley goal', () => {
  it('--wait follows a goal judged by a command until it is met; --status shows it; a zero budget is refused', async () => {
    const root = await project();
    const server = await serve(root, { defaultTurn: [{ type: 'text', text: 'Another step done.' }] });
    const client = await connect(server.info, 'goal-cli');
    await drafted(client);

    const set = await runParley(
      [
        'goal',
        'the judge passes',
        '--judge-command',
        passesOnRun(2),
        '--turns',
        '5',
        '--wait',
        '--channel',
        'goal-cli',
      ],
      { cwd: root },
    );
    expect(set.stderr).toBe('');
    expect(set.stdout).toContain('turn 1: not met');
    expect(set.stdout).toContain('turn 2: met');
    expect(set.stdout).toContain('ended (met)');
    expect(set.stdout).toContain('Budget used: 2/5 turns');
    expect(set.code).toBe(0);

    const status = await runParley(['goal', '--status', '--json', '--channel', 'goal-cli'], { cwd: root });
    expect(status.code).toBe(0);
    const goal = JSON.parse(status.stdout) as GoalStatus;
    expect(goal).toMatchObject({ condition: 'the judge passes', state: 'ended', ended: { reason: 'met' } });
    expect(goal.judgements.map((judgement) => judgement.met)).toEqual([false, true]);
    // What the command printed is what the continuation prompt was told was missing.
    expect(goal.judgements[0]!.missing).toContain('judged 1 times');

    const refused = await runParley(['goal', 'anything', '--turns', '0', '--channel', 'goal-cli'], { cwd: root });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/turn/i);
    // Nothing changed: the goal shown is still the one that was met.
    expect((await client.request('get_goal', {})).goal).toMatchObject({ goalId: goal.goalId, state: 'ended' });
  });

  it('a server SIGKILLed mid-goal starts again and the goal goes on from its log until its budget ends it', async () => {
    const root = await project();
    const first = await serve(root, {
      turns: [
        [{ type: 'text', text: 'Goal turn one.' }],
        [
          { type: 'text', text: 'Goal turn two, cut short' },
          { type: 'delay', ms: 600_000 },
        ],
      ],
    });
    const client = await connect(first.info, 'goal-crash');
    const sessionId = await drafted(client);
    const statuses: GoalStatus[] = [];
    client.on('goal_status', ({ goal }) => statuses.push(goal));
    const texts: string[] = [];
    client.on('channel_message', ({ event }) => {
      if (event.type === 'block_complete' && event.block.type === 'assistant_text') texts.push(event.block.content);
    });
    const { goal } = await client.request('set_goal', {
      condition: 'never holds',
      judge: { kind: 'command', command: 'echo "still failing"; exit 1' },
      budget: { turns: 3 },
    });
    await vi.waitFor(() => expect(texts).toContain('Goal turn two, cut short'), { timeout: 20_000 });
    expect(statuses.at(-1)).toMatchObject({ state: 'running', used: { turns: 1 } });

    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');

    const second = await serve(root, { defaultTurn: [{ type: 'text', text: 'Goal turn after the restart.' }] });
    const again = await connect(second.info, 'goal-crash');
    let ended: GoalStatus | undefined;
    await vi.waitFor(
      async () => {
        ended = (await again.request('get_goal', {})).goal;
        expect(ended?.state).toBe('ended');
      },
      { timeout: 30_000, interval: 100 },
    );
    expect(ended).toMatchObject({ goalId: goal!.goalId, ended: { reason: 'turns' }, used: { turns: 3 } });
    const log = (await again.request('get_events', { sessionId })).events;
    const answers = log.flatMap((event) =>
      event.type === 'block_complete' && event.block.type === 'assistant_text' ? [event.block.content] : [],
    );
    expect(answers[0]).toBe('Goal turn one.');
    expect(answers.at(-1)).toBe('Goal turn after the restart.');
    expect(JSON.stringify(log)).toContain('interrupted');
  });
});
