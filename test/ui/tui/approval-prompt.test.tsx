import './terminal-env.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { PermissionRequest } from '../../../src/protocol/index.js';
import { plain, renderApp, type AppRig } from './app-rig.js';
import { loadRecording, RecordedPeer } from './recorded-peer.js';

/**
 * The approval prompt in the whole app (ink-testing-library, recorded peer): a request shows on
 * `permission_requested` and on attach (`get_permissions`), each key sends its answer, and the
 * prompt goes on `permission_resolved` whoever answered.
 */

const recording = loadRecording();
const channelId = 'tui-demo';
const sessionId = 'session-approvals';

const edit: PermissionRequest = {
  requestId: 'request-edit',
  sessionId,
  tool: 'edit_file',
  kind: 'edit',
  title: 'Edit src/app.ts',
  path: 'src/app.ts',
  diff: '--- a/src/app.ts\n+++ b/src/app.ts\n@@ -1,2 +1,2 @@\n const a = 1;\n-const b = 2;\n+const b = 3;\n',
  allowAlwaysScope: 'edits to files in this session',
  requestedAt: '2026-11-21T07:00:00.000Z',
};
const command: PermissionRequest = {
  requestId: 'request-command',
  sessionId,
  tool: 'run_command',
  kind: 'command',
  title: 'Run `rm notes.txt`',
  command: 'rm notes.txt',
  cwd: 'src',
  allowAlwaysScope: 'commands starting with "rm"',
  requestedAt: '2026-11-21T07:00:01.000Z',
};

let rig: AppRig | undefined;
afterEach(() => rig?.stop());

function start(waiting: PermissionRequest[] = []): {
  rig: AppRig;
  peer: RecordedPeer;
  answers: Array<Record<string, unknown>>;
} {
  const peer = new RecordedPeer(recording);
  const answers: Array<Record<string, unknown>> = [];
  peer.handlers.set('get_permissions', () => ({ sessionId, mode: 'default', requests: waiting }));
  peer.handlers.set('answer_permission', (params) => {
    answers.push(params);
    return { requestId: params['requestId'], sessionId: params['sessionId'], decision: params['decision'] };
  });
  rig = renderApp(peer);
  return { rig, peer, answers };
}

async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('The condition never held.');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('the approval prompt', () => {
  it('shows a request waiting on attach with its diff coloured, and y allows it once', async () => {
    const { rig: app, answers } = start([edit]);
    const frame = await app.waitFor('Approve? Edit src/app.ts');
    expect(frame).toContain('src/app.ts +1 -1');
    expect(frame).toContain('[y] allow once [a] allow always: edits to files in this session [n] deny');
    const raw = app.raw();
    // Added lines green (32), removed red (31).
    expect(raw).toMatch(/\u001b\[32m\+const b = 3;/);
    expect(raw).toMatch(/\u001b\[31m-const b = 2;/);
    expect(plain(raw)).toContain(' const a = 1;');

    await app.press('y');
    await until(() => answers.length === 1);
    expect(answers[0]).toEqual({ sessionId, requestId: 'request-edit', decision: 'allow_once' });
    await app.waitFor((text) => !text.includes('Approve?'));
  });

  it('shows a command pushed while attached with its folder; a allows it always, n denies the next', async () => {
    const { rig: app, peer, answers } = start();
    await app.waitFor('Connected | No draft');
    peer.notify('permission_requested', { channelId, request: command });
    peer.notify('permission_requested', {
      channelId,
      request: {
        ...command,
        requestId: 'request-second',
        command: 'ls -a',
        title: 'Run `ls -a`',
        allowAlwaysScope: undefined,
      },
    });
    let frame = await app.waitFor('Approve? Run `rm notes.txt` (1 of 2 waiting)');
    expect(app.lines()).toMatch(/\$ rm notes\.txt +│\n│ in src /);
    expect(frame).toContain('[a] allow always: commands starting with "rm"');
    // Keys go to the prompt, not the input line.
    expect(frame).not.toContain('❯ a');

    await app.press('a');
    await until(() => answers.length === 1);
    expect(answers[0]).toMatchObject({ requestId: 'request-command', decision: 'allow_always' });
    frame = await app.waitFor('Approve? Run `ls -a`');
    // Without a scope only a one-time answer exists: no [a] offered.
    expect(frame).not.toContain('allow always');
    await app.press('n');
    await until(() => answers.length === 2);
    expect(answers[1]).toMatchObject({ requestId: 'request-second', decision: 'deny' });
    await app.waitFor((text) => !text.includes('Approve?'));
    // The input line takes keys again.
    await app.press('hi');
    await app.waitFor('❯ hi');
  });

  it('goes away when another client answers (permission_resolved)', async () => {
    const { rig: app, peer, answers } = start([command]);
    await app.waitFor('Approve? Run `rm notes.txt`');
    peer.notify('permission_resolved', {
      channelId,
      sessionId,
      requestId: 'request-command',
      decision: 'deny',
      source: 'client',
    });
    await app.waitFor((text) => !text.includes('Approve?'));
    expect(answers).toEqual([]);
  });

  it('says why when the answer fails, and keeps the request', async () => {
    const { rig: app, peer } = start([command]);
    peer.handlers.set('answer_permission', () => new Error('No approval request request-command is waiting.'));
    await app.waitFor('Approve? Run `rm notes.txt`');
    await app.press('y');
    const frame = await app.waitFor(
      'Could not answer "Run `rm notes.txt`": No approval request request-command is waiting.',
    );
    expect(frame).toContain('Approve? Run `rm notes.txt`');
  });
});
