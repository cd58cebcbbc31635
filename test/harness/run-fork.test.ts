import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedBackend, step, type ScriptedBackend } from '../../src/backends/index.js';
import {
  createRunService,
  defineAgent,
  defineHarness,
  type AnyHarness,
  type RunService,
} from '../../src/harness/index.js';
import { createSessionManager, type SessionManager } from '../../src/sessions/index.js';
import {
  createFileRunStore,
  createFileStore,
  createMemoryRunStore,
  createMemoryStore,
  createPostgresRunStore,
  createPostgresStore,
  type RunStore,
  type SessionStore,
} from '../../src/store/index.js';
import { postgresSkipReason, startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { expectCode, tempDir } from './helpers.js';
import {
  hasEnded,
  isWaiting,
  manualClock,
  projectWithWorkflow,
  waitForRun,
  type ManualClock,
} from './run-service-helpers.js';

/**
 * The code-review workflow of run-service.test.ts: write, ask (with choices, optionally a timeout
 * or a validator), review. Its journal: now, random, session, turn-start, turn, prompt, reply,
 * session, turn-start, turn.
 */
function codeReview(
  writer: ScriptedBackend,
  reviewer: ScriptedBackend,
  question: { timeout?: number; refuse?: string } = {},
): AnyHarness {
  return defineHarness({
    name: 'code-review',
    agents: {
      writer: defineAgent({ name: 'Writer', role: 'writes code', backend: writer }),
      reviewer: defineAgent({ name: 'Reviewer', role: 'reviews code', backend: reviewer }),
    },
    async run(context) {
      context.now();
      context.random();
      const draft = await context.agents.writer.run('Write a.ts');
      const answer = await context.session!.waitForUser(`Approve this draft? ${draft}`, {
        choices: ['yes', 'no'],
        ...(question.timeout !== undefined ? { timeout: question.timeout, defaultChoice: 'no' } : {}),
        ...(question.refuse !== undefined
          ? { validator: (text: string) => (text === question.refuse ? 'not today' : true) }
          : {}),
      });
      const review = await context.agents.reviewer.run(`Review (${answer.choice ?? answer.content}): ${draft}`);
      return { draft, review, approved: answer.choice === 'yes' };
    },
  }) as AnyHarness;
}

const SOURCE_KINDS = [
  'now',
  'random',
  'session',
  'turn-start',
  'turn',
  'prompt',
  'reply',
  'session',
  'turn-start',
  'turn',
];
const REPLY_STEP = 6;
const PROMPT_STEP = 5;

interface Stores {
  runStore: RunStore;
  sessionStore: SessionStore;
  close(): Promise<void>;
}

interface World {
  manager: SessionManager;
  runStore: RunStore;
  clock: ManualClock;
  writer: ScriptedBackend;
  reviewer: ScriptedBackend;
  open(): RunService;
  close(): Promise<void>;
}

let postgres: TestPostgres | undefined;
const postgresSkip = postgresSkipReason();

/** The refusals and the turn cut are the service's logic alone: they run on the memory stores only. */
const kinds: Array<{ name: string; skip?: string; everything?: boolean; open(): Promise<Stores> }> = [
  {
    name: 'memory',
    everything: true,
    open: async () => ({
      runStore: createMemoryRunStore(),
      sessionStore: createMemoryStore(),
      close: async () => {},
    }),
  },
  {
    name: 'file',
    open: async () => {
      const dataDir = await tempDir();
      const runStore = await createFileRunStore({ dataDir });
      const sessionStore = await createFileStore({ dataDir });
      return {
        runStore,
        sessionStore,
        close: async () => {
          await runStore.close();
          await sessionStore.close();
        },
      };
    },
  },
  {
    name: 'PostgreSQL',
    ...(postgresSkip !== undefined ? { skip: postgresSkip } : {}),
    open: async () => {
      postgres ??= await startTestPostgres();
      const schema = postgres.freshSchema('forks');
      const runStore = await createPostgresRunStore({ connectionString: postgres.url(), schema });
      const sessionStore = await createPostgresStore({ connectionString: postgres.url(), schema });
      return {
        runStore,
        sessionStore,
        close: async () => {
          await runStore.close();
          await sessionStore.close();
          await postgres!.dropSchema(schema);
        },
      };
    },
  },
];

afterAll(async () => {
  await postgres?.destroy();
});

async function world(stores: Stores, question: Parameters<typeof codeReview>[2] = {}): Promise<World> {
  const root = await projectWithWorkflow(await tempDir(), 'workflows/review.ts', {
    workflows: { review: 'workflows/review.ts' },
  });
  const writer = createScriptedBackend({ defaultTurn: () => [step.text('const a = 1;')] });
  const reviewer = createScriptedBackend({
    defaultTurn: (call) => [step.text(`reviewed: ${call.prompt.split('\n').pop()}`)],
  });
  const harness = codeReview(writer, reviewer, question);
  const manager = await createSessionManager({ store: stores.sessionStore });
  const clock = manualClock();
  const services: RunService[] = [];
  return {
    manager,
    runStore: stores.runStore,
    clock,
    writer,
    reviewer,
    open() {
      const service = createRunService({
        runStore: stores.runStore,
        sessionManager: manager,
        projectRoot: root,
        clock,
        loadWorkflow: async () => harness,
      });
      services.push(service);
      return service;
    },
    async close() {
      for (const service of services) await service.close();
      await manager.close();
      await stores.close();
    },
  };
}

/** A source run answered "yes" and complete. */
async function finishedSource(w: World, service: RunService): Promise<string> {
  const run = await service.startRun({ workflow: 'review' });
  await waitForRun(service, run.id, isWaiting);
  expect((await service.answerPrompt(run.id, 'prompt-1', 'yes')).accepted).toBe(true);
  const done = await waitForRun(service, run.id, hasEnded);
  expect(done.result).toMatchObject({ approved: true, review: 'reviewed: Review (yes): const a = 1;' });
  expect((await w.runStore.readJournal(run.id)).map((entry) => entry.kind)).toEqual(SOURCE_KINDS);
  return run.id;
}

for (const kind of kinds) {
  describe.skipIf(kind.skip !== undefined)(`forkRun on the ${kind.name} stores`, () => {
    beforeAll(async () => {
      if (kind.name === 'PostgreSQL') postgres ??= await startTestPostgres();
    }, 120_000);

    it('"what if I had said no": the fork replays the writer\'s turn, takes the new answer, and the source is unchanged', async () => {
      const w = await world(await kind.open());
      const service = w.open();
      const sourceId = await finishedSource(w, service);
      const sourceRecord = await w.runStore.getRun(sourceId);
      const sourceJournal = await w.runStore.readJournal(sourceId);
      const writerSession = sourceRecord!.agents.find((agent) => agent.key === 'writer')!.sessionId!;
      const writerEvents = (await w.manager.getEvents(writerSession)).length;
      const prompts: string[] = [];
      service.on('run_prompt', ({ runId }) => prompts.push(runId));

      const fork = await service.forkRun(sourceId, { atStep: REPLY_STEP, answer: 'no' });
      expect(fork.forkedFrom).toEqual({ runId: sourceId, step: REPLY_STEP, answer: 'no' });
      const done = await waitForRun(service, fork.id, hasEnded);
      expect(done.status).toBe('complete');
      expect(done.result).toEqual({
        draft: 'const a = 1;',
        review: 'reviewed: Review (no): const a = 1;',
        approved: false,
      });
      // The writer ran once, for the source; the fork asked nobody the question again.
      expect(w.writer.calls).toHaveLength(1);
      expect(w.reviewer.calls).toHaveLength(2);
      expect(prompts).toEqual([]);

      // The fork's journal: the source's up to the question, its own answer, then its own review.
      const journal = await w.runStore.readJournal(fork.id);
      expect(journal.map((entry) => entry.kind)).toEqual(SOURCE_KINDS);
      expect(journal.slice(0, 2).map((entry) => entry.data)).toEqual(
        sourceJournal.slice(0, 2).map((entry) => entry.data),
      );
      expect(journal[REPLY_STEP]!.data).toMatchObject({ promptId: 'prompt-1', content: 'no', choice: 'no' });

      // The writer goes on in a fork of its session; the source's sessions took nothing new.
      const forkWriter = done.agents.find((agent) => agent.key === 'writer')!.sessionId!;
      expect(forkWriter).not.toBe(writerSession);
      expect((await w.manager.getSession(forkWriter)).forkedFrom).toMatchObject({ sessionId: writerSession });
      expect((await w.manager.loadConversation(forkWriter)).blocks.map((block) => block.type)).toEqual([
        'user_message',
        'assistant_text',
      ]);
      expect(await w.manager.getEvents(writerSession)).toHaveLength(writerEvents);
      const forkReviewer = done.agents.find((agent) => agent.key === 'reviewer')!.sessionId!;
      const sourceReviewer = sourceRecord!.agents.find((agent) => agent.key === 'reviewer')!.sessionId!;
      expect(forkReviewer).not.toBe(sourceReviewer);
      expect((await w.manager.getSession(forkReviewer)).forkedFrom).toBeUndefined();

      expect(await w.runStore.getRun(sourceId)).toEqual(sourceRecord);
      expect(await w.runStore.readJournal(sourceId)).toEqual(sourceJournal);
      await w.close();
    });

    it('a fork at a question without an answer waits there, asked anew with its whole timeout, and survives a restart', async () => {
      const w = await world(await kind.open(), { timeout: 60_000 });
      const service = w.open();
      const sourceId = await finishedSource(w, service);
      w.clock.advance(3_600_000);

      const fork = await service.forkRun(sourceId, { atStep: PROMPT_STEP });
      expect(fork.status).toBe('waiting');
      expect(fork.pendingPrompts).toEqual([
        expect.objectContaining({
          promptId: 'prompt-1',
          askedAt: new Date(w.clock.now()).toISOString(),
          deadline: new Date(w.clock.now() + 60_000).toISOString(),
        }),
      ]);
      expect(await w.runStore.readJournal(fork.id)).toHaveLength(PROMPT_STEP + 1);

      // A restarted process replays the fork from its own journal and waits at the same question.
      await service.close();
      const again = w.open();
      await again.recoverRuns();
      const waiting = await waitForRun(again, fork.id, isWaiting);
      expect(waiting.pendingPrompts).toEqual(fork.pendingPrompts);
      expect((await again.answerPrompt(fork.id, 'prompt-1', '2')).accepted).toBe(true);
      expect((await waitForRun(again, fork.id, hasEnded)).result).toMatchObject({ approved: false });
      expect(w.writer.calls).toHaveLength(1);
      await w.close();
    });

    it.runIf(kind.everything === true)(
      "a fork at an agent turn keeps the turn's result and asks the question live",
      async () => {
        const w = await world(await kind.open());
        const service = w.open();
        const sourceId = await finishedSource(w, service);
        const asked: string[] = [];
        service.on('run_prompt', ({ runId, prompt }) => asked.push(`${runId} ${prompt.promptId}`));

        const fork = await service.forkRun(sourceId, { atStep: 3 });
        const waiting = await waitForRun(service, fork.id, isWaiting);
        expect(waiting.pendingPrompts.map((prompt) => prompt.promptId)).toEqual(['prompt-1']);
        expect(asked).toEqual([`${fork.id} prompt-1`]);
        expect((await w.runStore.readJournal(fork.id)).map((entry) => entry.kind)).toEqual(SOURCE_KINDS.slice(0, 6));
        expect(w.writer.calls).toHaveLength(1);
        await w.close();
      },
    );

    it.runIf(kind.everything === true)(
      'refuses an unknown run, a step the journal does not have, an answer at no question and one outside the choices, changing nothing',
      async () => {
        const w = await world(await kind.open());
        const service = w.open();
        const sourceId = await finishedSource(w, service);
        const runs = await w.runStore.listRuns();
        const sessions = await w.manager.listSessions();

        await expectCode(service.forkRun('run-nope', { atStep: 0 }), 'RUN_NOT_FOUND');
        await expect(service.forkRun(sourceId, { atStep: 99 })).rejects.toThrow(
          /holds steps 0 to 9\. .* Its questions: step 5: question prompt-1 \("Approve this draft\? const a = 1;"\)\./,
        );
        for (const atStep of [-1, SOURCE_KINDS.length, 1.5])
          await expectCode(service.forkRun(sourceId, { atStep }), 'RUN_STEP_NOT_FOUND');
        await expect(service.forkRun(sourceId, { atStep: 3, answer: 'no' })).rejects.toThrow(
          /Step 3 .* is agent "writer" turn 1, not a question/,
        );
        await expectCode(service.forkRun(sourceId, { atStep: 3, answer: 'no' }), 'NOT_A_QUESTION');
        await expect(service.forkRun(sourceId, { atStep: REPLY_STEP, answer: 'maybe' })).rejects.toThrow(
          /"maybe" is not one of the choices .*\(yes, no\)/,
        );
        await expectCode(service.forkRun(sourceId, { atStep: PROMPT_STEP, answer: 'maybe' }), 'ANSWER_REFUSED');

        expect(await w.runStore.listRuns()).toEqual(runs);
        expect(await w.manager.listSessions()).toHaveLength(sessions.length);
        expect(w.writer.calls).toHaveLength(1);
        await w.close();
      },
    );

    it.runIf(kind.everything === true)(
      'a fork whose journal could not be copied stays failed (FORK_INCOMPLETE) and is never run from half a journal',
      async () => {
        const stores = await kind.open();
        let failNext = false;
        const runStore: RunStore = {
          ...stores.runStore,
          kind: stores.runStore.kind,
          async appendJournal(runId, entries, options) {
            if (failNext) {
              failNext = false;
              throw new Error('disk full');
            }
            return stores.runStore.appendJournal(runId, entries, options);
          },
        };
        const w = await world({ ...stores, runStore });
        const service = w.open();
        const sourceId = await finishedSource(w, service);
        failNext = true;
        await expect(service.forkRun(sourceId, { atStep: PROMPT_STEP })).rejects.toThrow('disk full');
        const [fork] = (await runStore.listRuns()).filter((run) => run.forkedFrom?.runId === sourceId);
        expect(fork).toMatchObject({ status: 'failed', error: { code: 'FORK_INCOMPLETE' }, journalLength: 0 });
        expect(fork!.error!.message).toContain(`fork ${sourceId} again`);
        // A restart resumes unfinished runs only: the half fork is not among them.
        await service.close();
        expect(await w.open().recoverRuns()).toEqual([]);
        expect(w.writer.calls).toHaveLength(1);
        await w.close();
      },
    );

    it.runIf(kind.everything === true)(
      "an answer the question's validator refuses is ANSWER_REFUSED and the fork is aborted, not left waiting",
      async () => {
        const w = await world(await kind.open(), { refuse: 'no' });
        const service = w.open();
        const sourceId = await finishedSource(w, service);

        const refused = service.forkRun(sourceId, { atStep: REPLY_STEP, answer: 'no' });
        await expect(refused).rejects.toThrow(/refused the answer "no": not today/);
        const forks = (await w.runStore.listRuns()).filter((run) => run.forkedFrom?.runId === sourceId);
        expect(forks.map((run) => run.status)).toEqual(['aborted']);
        expect(w.reviewer.calls).toHaveLength(1);
        await w.close();
      },
    );
  });
}
