import { describe, expect, it } from 'vitest';
import { ApprovalBroker, nativeApprover, type ApprovalRequest } from '../../src/workspace/index.js';

/** A native back end's asks (Codex's commands and patches) go through the workspace tools' broker. */
describe('nativeApprover', () => {
  it('asks as the workspace tools do: relative folder, command prefix remembered by allow_always', async () => {
    const asked: ApprovalRequest[] = [];
    const broker = new ApprovalBroker({
      approver: (request) => {
        asked.push(request);
        return 'allow_always';
      },
    });
    const ask = nativeApprover(broker, { sessionId: 's1', conversationId: 'worker-1', root: '/work/project' });
    const first = await ask({
      kind: 'command',
      tool: 'shell',
      toolUseId: 'call-1',
      title: 'Run `npm test`',
      command: 'npm test',
      cwd: '/work/project/packages/a',
    });
    expect(first).toBe('allow_always');
    expect(asked[0]).toMatchObject({
      sessionId: 's1',
      conversationId: 'worker-1',
      tool: 'shell',
      toolUseId: 'call-1',
      kind: 'command',
      command: 'npm test',
      cwd: 'packages/a',
      allowAlwaysScope: 'commands starting with "npm test"',
    });
    // Remembered for the session: the next `npm test …` is allowed without asking anyone.
    expect(await ask({ kind: 'command', tool: 'shell', title: 'Run', command: 'npm test -- --watch' })).toBe(
      'allow_once',
    );
    expect(asked).toHaveLength(1);
    // A chained command offers nothing to remember and is asked each time.
    await ask({ kind: 'command', tool: 'shell', title: 'Run', command: 'npm test && rm -rf ~', cwd: '/elsewhere' });
    expect(asked).toHaveLength(2);
    expect(asked[1]?.allowAlwaysScope).toBeUndefined();
    expect(asked[1]?.cwd).toBe('/elsewhere');
  });

  it('asks for a patch with its paths and diff; a deny is a deny, and an abort denies', async () => {
    const broker = new ApprovalBroker();
    const ask = nativeApprover(broker, { sessionId: 's2', root: '/work/project' });
    const denied = ask({
      kind: 'edit',
      tool: 'edit_file',
      title: 'Edit /work/project/a.txt',
      path: '/work/project/a.txt, /work/project/b.txt',
      diff: '@@ -1 +1 @@\n-a\n+A\n',
    });
    const [pending] = broker.pending('s2');
    expect(pending).toMatchObject({
      kind: 'edit',
      path: 'a.txt, b.txt',
      allowAlwaysScope: 'every edit_file call in this session',
    });
    broker.answer(pending!.requestId, 'deny');
    expect(await denied).toBe('deny');

    const controller = new AbortController();
    const aborted = ask({ kind: 'command', tool: 'shell', title: 'Run `ls`', command: 'ls' }, controller.signal);
    controller.abort();
    expect(await aborted).toBe('deny');
    expect(broker.pending('s2')).toEqual([]);
  });
});
