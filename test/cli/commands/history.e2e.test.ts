/**
 * `parley rewind` and `parley branches` as processes: a two-turn session made with `parley chat` on
 * the scripted back end is rewound to its first turn, shown (the active branch, the other named),
 * continued, listed and switched back; an unknown branch is refused with an error that says what to do.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../../src/conversation/index.js';
import { createFileStore } from '../../../src/store/index.js';
import { runParley } from '../../helpers/run-parley.js';

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

describe.sequential('parley rewind and parley branches', () => {
  let project: string;

  beforeAll(async () => {
    project = await mkdtemp(join(tmpdir(), 'parley-history-cli-'));
  });
  afterAll(async () => {
    await rm(project, { recursive: true, force: true });
  });

  it('rewinds, shows the active branch and names the other, continues, lists and switches', async () => {
    const first = await runParley(['chat', 'the first question'], { cwd: project });
    expect(first.code).toBe(0);
    const sessionId = /session: (\S+)/.exec(first.stderr)![1]!;
    await runParley(['chat', '--session', sessionId, 'the second question'], { cwd: project });
    const second = await userMessageEvent(project, sessionId, 'the second question');

    const rewound = await runParley(['rewind', sessionId, '--to', String(second.seq - 1)], { cwd: project });
    expect(rewound.code).toBe(0);
    expect(rewound.stdout).toContain(`rewound ${sessionId} to seq ${second.seq - 1}`);
    const shown = await runParley(['show', sessionId], { cwd: project });
    expect(shown.stdout).toContain('the first question');
    expect(shown.stdout).not.toContain('the second question');
    expect(shown.stdout).toMatch(/branch b0:\d+ \(active.*other branches: b0 /);

    await runParley(['chat', '--session', sessionId, 'a different second question'], { cwd: project });
    const listed = await runParley(['branches', sessionId], { cwd: project });
    const lines = listed.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^ {2}b0 /);
    expect(lines[1]).toMatch(/^\* b\d+ /);
    expect(lines[1]).toContain('turns');

    const switched = await runParley(['branches', sessionId, '--switch', 'b0'], { cwd: project });
    expect(switched.code).toBe(0);
    expect(switched.stdout).toContain(`switched ${sessionId} to branch b0`);

    const unknown = await runParley(['branches', sessionId, '--switch', 'b999'], { cwd: project });
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('has no branch "b999"');
  }, 120_000);
});
