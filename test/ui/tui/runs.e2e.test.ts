import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, type AgentBackend } from '../../../src/backends/index.js';
import { startServer } from '../../../src/server/index.js';
import { checkSystemPart, TMUX } from '../../helpers/system-part.js';
import { CODE_REVIEW, RELEASE_NOTES, StandInRunService } from '../../helpers/stand-in-run-service.js';
import { Terminal } from './tmux-terminal.js';

/**
 * Durable runs' questions in the TUI, in a real terminal (tmux): `parley` attaches to the
 * project's server, started here with the in-memory stand-in for the run core
 * (test/helpers/stand-in-run-service.ts), shows the question a run waits on with its choices and a
 * countdown to its deadline, and answers it with /answer; /runs lists the runs.
 */

const tmux = checkSystemPart(TMUX);
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe.skipIf(tmux.skip)('run questions in the terminal UI (tmux)', () => {
  it('shows a waiting question with its choices and deadline, counts down, refuses a bad answer, takes a good one; /runs lists the runs', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'parley-tui-runs-'));
    cleanups.push(() => rm(folder, { recursive: true, force: true }));
    const runs = new StandInRunService({ review: CODE_REVIEW, notes: RELEASE_NOTES });
    const backend = createScriptedBackend();
    const server = await startServer({
      projectRoot: folder,
      dataDir: join(folder, '.parley'),
      backendFor: () => backend as AgentBackend,
      runService: runs,
      log: () => undefined,
    });
    cleanups.push(() => server.close());
    // Asked before the TUI opens: it reads the waiting runs when it connects.
    const review = await runs.startRun({ workflow: 'review' });

    const terminal = new Terminal();
    cleanups.push(() => terminal.close());
    await terminal.open(folder);
    await terminal.waitFor('Parley ● Connected');
    let screen = await terminal.waitFor('? Apply the suggested fixes?');
    expect(screen).toContain(`(run ${review.id} · code-review)`);
    expect(screen).toContain('1) approve   2) reject');
    const countdown = /(\d+m \d\ds) left · answer with \/answer <number or text>/;
    const first = countdown.exec(screen)?.[1];
    expect(first).toBeDefined();
    // The deadline counts down while the question waits.
    screen = await terminal.waitFor(new RegExp(`(?<!\\d)(?!${first} )\\d+m \\d\\ds left`));

    await terminal.type('/answer 3');
    await terminal.waitFor(
      'The answer was refused: "3" is not one of the choices: approve, reject (or their numbers).',
    );
    expect((await runs.getRun(review.id)).status).toBe('waiting');

    await terminal.type('/answer 1');
    screen = await terminal.waitFor(`Answered "Apply the suggested fixes?" (${review.id}): approve`);
    expect(await runs.getRun(review.id)).toMatchObject({ status: 'complete', result: { approved: true } });
    await terminal.waitFor(/^(?![\s\S]*\? Apply the suggested fixes\?  \(run)/);

    // Asked while the TUI is open: it arrives as run_prompt.
    const notes = await runs.startRun({ workflow: 'notes' });
    await terminal.waitFor(`? Which version is this?  (run ${notes.id} · release-notes)`);
    await terminal.type('/answer soon');
    await terminal.waitFor('The answer was refused: "soon" is not a version like 1.2.3.');
    await terminal.type('/answer 1.4.0');
    await terminal.waitFor(`Answered "Which version is this?" (${notes.id}): 1.4.0`);

    await terminal.type('/runs');
    screen = await terminal.waitFor('Runs (2)');
    expect(screen).toMatch(new RegExp(`${notes.id}  release-notes  complete · draft · \\d+s ago`));
    expect(screen).toMatch(new RegExp(`${review.id}  code-review  complete · approval · \\d+s ago`));
  }, 120_000);
});
