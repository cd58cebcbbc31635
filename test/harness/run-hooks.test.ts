import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { followRunHooks, type RunServiceEvents } from '../../src/harness/index.js';
import { HookRunner, parseHooksConfig } from '../../src/hooks/index.js';
import type { RunRecord } from '../../src/store/index.js';

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'parley-run-hooks-'));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

/** A run service's `on`, driven by the test. */
function fakeService() {
  const listeners: Array<(payload: RunServiceEvents['run_updated']) => void> = [];
  return {
    on: ((event: string, listener: (payload: RunServiceEvents['run_updated']) => void) => {
      if (event === 'run_updated') listeners.push(listener);
      return () => listeners.splice(listeners.indexOf(listener), 1);
    }) as never,
    update: (run: RunRecord) => {
      for (const listener of listeners) listener({ run });
    },
    listeners,
  };
}

function record(fields: Partial<RunRecord>): RunRecord {
  return {
    id: 'run-1',
    harness: 'code-review',
    workflow: { ref: 'reviews/code-review.ts', path: '/project/reviews/code-review.ts' },
    input: {},
    state: {},
    status: 'running',
    phases: [],
    pendingPrompts: [],
    agents: [{ key: 'reviewer', name: 'Reviewer', sessionId: 'session-9' }],
    journalLength: 0,
    createdAt: '2026-12-02T06:00:00.000Z',
    updatedAt: '2026-12-02T06:00:00.000Z',
    ...fields,
  };
}

describe('RunUpdate hooks', () => {
  it('fire once per change of phase or status, with the documented input, and not on other writes', async () => {
    const file = join(folder, 'events.jsonl');
    const record_ = join(folder, 'record.sh');
    // One write per input: the hooks of two updates run at once.
    await writeFile(record_, `#!/bin/sh\ninput=$(cat)\nprintf '%s\\n' "$input" >> ${file}\n`);
    await chmod(record_, 0o755);
    const parsed = parseHooksConfig({ RunUpdate: [{ hooks: [{ type: 'command', command: record_ }] }] }, 'test.json');
    const service = fakeService();
    const stop = followRunHooks(service, new HookRunner({ hooks: parsed.hooks }), '/project');
    service.update(record({}));
    // The same status and phase again (a prompt's answer journaled): no hook.
    service.update(record({ journalLength: 3 }));
    service.update(
      record({
        status: 'waiting',
        phase: 'review',
        pendingPrompts: [{ promptId: 'p1', prompt: 'Ship it?', askedAt: '2026-12-02T06:01:00.000Z' }],
      }),
    );
    await vi.waitFor(async () => expect((await readFile(file, 'utf8')).trim().split('\n')).toHaveLength(2));
    const inputs = (await readFile(file, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .sort((a, b) => String(a['status']).localeCompare(String(b['status'])));
    expect(inputs[0]).toEqual({
      session_id: 'session-9',
      cwd: '/project',
      hook_event_name: 'RunUpdate',
      run_id: 'run-1',
      harness: 'code-review',
      workflow: 'reviews/code-review.ts',
      status: 'running',
      pending_prompts: [],
    });
    expect(inputs[1]).toEqual({
      session_id: 'session-9',
      cwd: '/project',
      hook_event_name: 'RunUpdate',
      run_id: 'run-1',
      harness: 'code-review',
      workflow: 'reviews/code-review.ts',
      status: 'waiting',
      previous_status: 'running',
      phase: 'review',
      pending_prompts: [{ prompt_id: 'p1', prompt: 'Ship it?' }],
    });
    stop();
    expect(service.listeners).toHaveLength(0);
  });

  it('a matcher selects by the new status; a failing hook is reported, never thrown', async () => {
    const parsed = parseHooksConfig(
      { RunUpdate: [{ matcher: 'failed', hooks: [{ type: 'command', command: 'echo broken >&2; exit 1' }] }] },
      'test.json',
    );
    const service = fakeService();
    const reports: string[] = [];
    followRunHooks(service, new HookRunner({ hooks: parsed.hooks }), folder, (line) => reports.push(line));
    service.update(record({}));
    service.update(record({ status: 'failed', error: { code: 'BOOM', message: 'it broke' } }));
    await vi.waitFor(() => expect(reports).toHaveLength(1));
    expect(reports[0]).toBe(
      'hooks: the RunUpdate hook `echo broken >&2; exit 1` (test.json hooks.RunUpdate[0].hooks[0]) failed: exited with code 1: broken',
    );
  });
});
