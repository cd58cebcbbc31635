/**
 * `parley run --detach`, `parley runs` and `parley answer` as processes (≈1–2 s each: Node starts and
 * compiles the CLI with tsx), against a server started in this test over a temp project, whose
 * RunService is the in-memory stand-in for the core (test/helpers/stand-in-run-service.ts). The
 * commands find the server as the TUI does: server.json in the project's data folder.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedBackend, type AgentBackend } from '../../../src/backends/index.js';
import { startServer, type RunningServer } from '../../../src/server/index.js';
import { describeQuestion, formatDuration, formatRunTable, resolveChoice } from '../../../src/cli/commands/runs.js';
import { runParley } from '../../helpers/run-parley.js';
import { CODE_REVIEW, RELEASE_NOTES, StandInRunService } from '../../helpers/stand-in-run-service.js';
import { startServeProcess } from '../../server/serve-process.js';
import { coreRunServiceFactory } from '../../../src/cli/run-service-wiring.js';

let root: string;
let runs: StandInRunService;
let server: RunningServer;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'parley-runs-cli-'));
  await mkdir(join(root, 'reviews'));
  await writeFile(
    join(root, 'reviews', 'code-review.ts'),
    '// the workflow module; the stand-in run service only needs its name\n',
  );
  runs = new StandInRunService({ 'reviews/code-review.ts': CODE_REVIEW, 'release-notes': RELEASE_NOTES });
  const backend = createScriptedBackend();
  server = await startServer({
    projectRoot: root,
    dataDir: join(root, '.parley'),
    backendFor: () => backend as AgentBackend,
    runService: runs,
    log: () => undefined,
  });
});

afterAll(async () => {
  await server?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('parley run --detach, runs, answer', () => {
  it("starts a run on the project's server from a file under the project, prints its id, and lists it", async () => {
    const started = await runParley(['run', './reviews/code-review.ts', '--detach', '--input', '{"diff":"+1"}'], {
      cwd: root,
    });
    expect(started.stderr).toContain('Started code-review as run');
    expect(started.code).toBe(0);
    const id = started.stdout.trim();
    expect(id).toMatch(/^run-\d+$/);
    expect(started.stderr).toContain(`answer with \`parley answer ${id}\``);
    const run = await runs.getRun(id);
    expect(run).toMatchObject({
      workflow: { ref: 'reviews/code-review.ts' },
      input: { diff: '+1' },
      status: 'waiting',
    });

    const listed = await runParley(['runs'], { cwd: root });
    expect(listed.code).toBe(0);
    const [header, row] = listed.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^ID\s+WORKFLOW\s+STATUS\s+PHASE\s+PENDING QUESTION\s+AGE$/);
    expect(row).toMatch(
      new RegExp(`^${id}\\s+code-review\\s+waiting\\s+approval\\s+Apply the suggested fixes\\?\\s+\\d+[smhd]$`),
    );

    const json = await runParley(['runs', '--json', '--status', 'complete'], { cwd: root });
    expect(JSON.parse(json.stdout)).toEqual([]);
  });

  it('answer without a response shows the numbered choices and takes a number from standard input', async () => {
    const { id } = await runs.startRun({ workflow: 'reviews/code-review.ts' });
    const answered = await runParley(['answer', id], { cwd: root, input: '2\n' });
    expect(answered.stdout).toContain('? Apply the suggested fixes?\n  1) approve\n  2) reject\n');
    expect(answered.stdout).toMatch(/answer within (59m|1h)/);
    expect(answered.stdout).toContain(`of run ${id}: reject`);
    expect(answered.code).toBe(0);
    expect(await runs.getRun(id)).toMatchObject({ status: 'complete', result: { approved: false } });

    const again = await runParley(['answer', id, 'approve'], { cwd: root });
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain(`Run ${id} has no question waiting for an answer (it is complete).`);
  });

  it("a refused answer prints the validator's message, exits non-zero and leaves the question waiting", async () => {
    const { id } = await runs.startRun({ workflow: 'release-notes' });
    const refused = await runParley(['answer', id, 'soon'], { cwd: root });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('the answer was refused: "soon" is not a version like 1.2.3.');
    expect((await runs.getRun(id)).status).toBe('waiting');
    const accepted = await runParley(['answer', id, '3.1.0'], { cwd: root });
    expect(accepted.code).toBe(0);
    expect((await runs.getRun(id)).result).toEqual({ version: '3.1.0' });
  });

  it('runs fork asks the server for the fork at the step with the answer, prints its id; a step that is no number is refused', async () => {
    const source = await runs.startRun({ workflow: 'reviews/code-review.ts' });
    const forked = await runParley(['runs', 'fork', source.id, '--at-step', '1', '--answer', 'reject'], { cwd: root });
    expect(forked.stderr).toContain(`Forked run ${source.id} at step 1 answering "reject" as run`);
    expect(forked.code).toBe(0);
    const fork = await runs.getRun(forked.stdout.trim());
    expect(fork).toMatchObject({ forkedFrom: { runId: source.id, step: 1, answer: 'reject' }, status: 'complete' });
    expect(runs.calls).toContainEqual({ method: 'forkRun', args: [source.id, { atStep: 1, answer: 'reject' }] });

    const bad = await runParley(['runs', 'fork', source.id, '--at-step', 'two'], { cwd: root });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--at-step must be a whole number from 0 (a step of the run\'s journal), not "two".');
  });

  it('an unknown run, a bad --status and a workflow the server does not know are clear errors', async () => {
    const unknown = await runParley(['answer', 'run-999', 'yes'], { cwd: root });
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('No run run-999.');
    const badStatus = await runParley(['runs', '--status', 'sleeping'], { cwd: root });
    expect(badStatus.code).toBe(2);
    expect(badStatus.stderr).toContain(
      '--status takes running, waiting, paused, complete, aborted, failed (comma-separated), not "sleeping".',
    );
    const noWorkflow = await runParley(['run', 'nothing-here', '--detach'], { cwd: root });
    expect(noWorkflow.code).toBe(2);
    expect(noWorkflow.stderr).toContain('No workflow "nothing-here" in this project.');
  });

  it('`parley serve` answers `parley runs`: runs not enabled while no core is wired, an empty list once it is', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'parley-runs-serve-'));
    const serve = await startServeProcess(folder);
    try {
      const result = await runParley(['runs'], { cwd: folder });
      if (coreRunServiceFactory === undefined) {
        expect(result.code).toBe(2);
        expect(result.stderr).toContain('Durable runs are not enabled on this server');
      } else {
        expect(result.stdout).toContain('No runs yet.');
        expect(result.code).toBe(0);
      }
    } finally {
      serve.child.kill('SIGTERM');
      await serve.exited;
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('without a running server, says how to start one', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'parley-runs-none-'));
    try {
      const result = await runParley(['runs'], { cwd: empty });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('No Parley server is running for this project');
      expect(result.stderr).toContain('Start one with `parley serve`');
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});

describe('run formatting', () => {
  const prompt = {
    promptId: 'p',
    prompt: 'Ship it?',
    choices: ['yes', 'no', '3'],
    defaultChoice: 'no',
    askedAt: '2026-01-01T00:00:00.000Z',
    deadline: '2026-01-01T00:05:00.000Z',
  };

  it('a number is the choice it numbers, unless it is itself a choice', () => {
    expect(resolveChoice(prompt, '1')).toBe('yes');
    expect(resolveChoice(prompt, ' 2 ')).toBe('no');
    expect(resolveChoice(prompt, '3')).toBe('3');
    expect(resolveChoice(prompt, '4')).toBe('4');
    expect(resolveChoice({}, ' free text ')).toBe(' free text ');
  });

  it('a question shows its choices numbered, its default and the time left', () => {
    expect(describeQuestion(prompt, new Date('2026-01-01T00:02:00.000Z'))).toBe(
      '? Ship it?\n  1) yes\n  2) no\n  3) 3\n  (default: no, answer within 3m)\n',
    );
  });

  it('ages and the table', () => {
    expect([
      formatDuration(-5),
      formatDuration(42_000),
      formatDuration(300_000),
      formatDuration(7_200_000),
      formatDuration(3 * 86_400_000),
    ]).toEqual(['0s', '42s', '5m', '2h', '3d']);
    const run = {
      id: 'run-7',
      harness: 'code-review',
      workflow: { ref: 'r', path: '/r' },
      status: 'waiting' as const,
      phase: 'approval',
      phases: ['approval'],
      pendingPrompts: [prompt, { ...prompt, promptId: 'q' }],
      agents: [],
      journalLength: 1,
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
    };
    expect(formatRunTable([run], new Date('2026-01-01T00:00:30.000Z'))).toBe(
      'ID     WORKFLOW     STATUS   PHASE     PENDING QUESTION  AGE\n' +
        'run-7  code-review  waiting  approval  Ship it? (+1)     30s\n',
    );
  });
});
