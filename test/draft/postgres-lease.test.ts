import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedBackend, step, type AgentBackend } from '../../src/backends/index.js';
import { isParleyError, type ConversationBlock } from '../../src/conversation/index.js';
import { createDraftService, type DraftService, type SubmitResult } from '../../src/draft/index.js';
import { createSessionManager, type SessionManager } from '../../src/sessions/index.js';
import {
  createPostgresDraftStore,
  createPostgresStore,
  type DraftStore,
  type SessionStore,
} from '../../src/store/index.js';
import { postgresSkipReason, startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { gate, tempProject, until } from './helpers.js';

// Two Parley servers over one PostgreSQL database: each with its own pools (session store and draft
// store), its own SessionManager and DraftService, as two `parley serve` processes would have.

const skipReason = postgresSkipReason();

interface TestServer {
  sessions: SessionStore;
  drafts: DraftStore;
  manager: SessionManager;
  service: DraftService;
  /** Dies: its connections go, its turn in flight is never finished, its lease is not released. */
  crash(): Promise<void>;
  close(): Promise<void>;
}

function shape(blocks: readonly ConversationBlock[]): string[] {
  return blocks.map((block) =>
    block.type === 'system'
      ? `system:${block.subtype}`
      : block.type === 'user_message' || block.type === 'assistant_text'
        ? `${block.type}:${block.content}`
        : block.type,
  );
}

describe.skipIf(skipReason !== undefined)('drafts on PostgreSQL: two servers, one database, the draft lease', () => {
  let database: TestPostgres;
  const cleanups: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    database = await startTestPostgres();
  }, 120_000);
  afterAll(async () => {
    await database?.destroy();
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  async function setting(): Promise<{ schema: string; root: string; dataDir: string }> {
    const schema = database.freshSchema('lease');
    const project = await tempProject();
    cleanups.push(async () => {
      await project.cleanup();
      await database.dropSchema(schema);
    });
    return { schema, root: project.root, dataDir: project.dataDir };
  }

  async function startServer(
    where: { schema: string; root: string; dataDir: string },
    owner: string,
    backend: AgentBackend,
    leaseTtlMs: number,
  ): Promise<TestServer> {
    const connectionString = database.url();
    const sessions = await createPostgresStore({ connectionString, schema: where.schema });
    const drafts = await createPostgresDraftStore({
      connectionString,
      schema: where.schema,
      home: { name: 'shop', path: where.root, dataDir: where.dataDir },
    });
    const manager = await createSessionManager({ store: sessions });
    const service = await createDraftService({
      manager,
      projectRoot: where.root,
      dataDir: where.dataDir,
      draftStore: drafts,
      backendFor: () => backend,
      leaseOwner: owner,
      leaseTtlMs,
    });
    let down = false;
    const server: TestServer = {
      sessions,
      drafts,
      manager,
      service,
      crash: async () => {
        down = true;
        await drafts.close();
        await sessions.close();
      },
      close: async () => {
        if (down) return;
        down = true;
        await service.close();
        await manager.close();
        await drafts.close();
        await sessions.close();
      },
    };
    cleanups.push(() => server.close());
    return server;
  }

  /** A prompt sent until the draft's old server's lease has expired and this server takes it over. */
  async function submitOnceFree(server: TestServer, content: string): Promise<SubmitResult> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        return await server.service.submitPrompt({ channelId: 'tui', content });
      } catch (error) {
        if (!isParleyError(error, 'DRAFT_RUN_ELSEWHERE') || Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }
  }

  it('a live server keeps its draft: a prompt on another server is refused naming it; after a graceful close it moves at once', async () => {
    const where = await setting();
    const a = await startServer(
      where,
      'server-a',
      createScriptedBackend({ idPrefix: 'a', turns: [[step.text('From A.')]] }),
      60_000,
    );
    const b = await startServer(
      where,
      'server-b',
      createScriptedBackend({ idPrefix: 'b', turns: [[step.text('From B.')]] }),
      60_000,
    );
    const task = await a.service.createTask({ project: 'shop', title: 'Login' });
    const { sessionId } = await a.service.draft({ channelId: 'tui', role: 'dev', project: 'shop', task: task.slug });
    await a.service.submitPrompt({ channelId: 'tui', content: 'hello A' });
    await a.service.settled({ channelId: 'tui' });

    const refused = await b.service
      .submitPrompt({ channelId: 'tui', content: 'hello B' })
      .catch((error: unknown) => error);
    expect(refused).toMatchObject({
      code: 'DRAFT_RUN_ELSEWHERE',
      data: { channelId: 'tui', sessionId, holder: 'server-a' },
    });
    expect((refused as Error).message).toContain('server-a');
    // Nothing was stored by the refusal, and B's startup recovery leaves A's draft alone.
    expect(shape((await b.manager.loadConversation(sessionId)).blocks)).toEqual([
      'user_message:hello A',
      'assistant_text:From A.',
    ]);
    expect(await b.service.recover()).toEqual({ recovered: 0, failed: [] });

    // A stops gracefully: its lease ends now, and B's next prompt runs there without waiting.
    await a.close();
    expect(await b.service.submitPrompt({ channelId: 'tui', content: 'hello B' })).toMatchObject({
      mode: 'draft',
      sessionId,
    });
    await b.service.settled({ channelId: 'tui' });
    expect(shape((await b.manager.loadConversation(sessionId)).blocks)).toEqual([
      'user_message:hello A',
      'assistant_text:From A.',
      'user_message:hello B',
      'assistant_text:From B.',
    ]);
    expect(await b.drafts.getDraft('shop', task.slug)).toMatchObject({ sessionId, status: 'active', turnCount: 2 });
  });

  it('a server that dies mid-turn: another takes the draft over at the next prompt, the cut turn marked interrupted', async () => {
    const where = await setting();
    const never = gate();
    const a = await startServer(
      where,
      'server-a',
      createScriptedBackend({
        idPrefix: 'a',
        turns: [
          [step.text('First answer.'), step.cost(0.1)],
          [step.text('Working on it'), step.wait(never.promise), step.text('never')],
        ],
      }),
      // Short, so the test does not wait long for it to run out once A is dead.
      300,
    );
    const b = await startServer(
      where,
      'server-b',
      createScriptedBackend({ idPrefix: 'b', turns: [[step.text('Picking up.'), step.cost(0.05)]] }),
      60_000,
    );
    const task = await a.service.createTask({ project: 'shop', title: 'Crashy' });
    const { sessionId } = await a.service.draft({ channelId: 'tui', role: 'dev', project: 'shop', task: task.slug });
    await a.service.submitPrompt({ channelId: 'tui', content: 'first question' });
    await a.service.settled({ channelId: 'tui' });
    let streamed = false;
    a.service.on('channel_message', ({ event }) => {
      if (
        event.type === 'block_complete' &&
        event.block.type === 'assistant_text' &&
        event.block.content === 'Working on it'
      )
        streamed = true;
    });
    const acknowledged = await a.service.submitPrompt({ channelId: 'tui', content: 'second question' });
    await until(() => streamed, 'the partial answer to be stored');
    await a.crash();

    const next = await submitOnceFree(b, 'are you still there?');
    expect(next).toMatchObject({ mode: 'draft', sessionId });
    await b.service.settled({ channelId: 'tui' });
    const conversation = await b.manager.loadConversation(sessionId);
    expect(shape(conversation.blocks)).toEqual([
      'user_message:first question',
      'assistant_text:First answer.',
      'user_message:second question',
      'assistant_text:Working on it',
      'system:interrupted',
      'user_message:are you still there?',
      'assistant_text:Picking up.',
    ]);
    expect(conversation.blocks[2]!.seq).toBe((acknowledged as { seq: number }).seq);
    const status = (await b.service.getDraftStatus({ channelId: 'tui' })).session!;
    expect(status).toMatchObject({ sessionId, turnCount: 3 });
    expect(status.cumulativeCostUsd).toBeCloseTo(0.15, 10);
    expect(await b.drafts.getDraft('shop', task.slug)).toMatchObject({
      sessionId,
      status: 'active',
      channelId: 'tui',
      turnCount: 3,
    });
    // B holds the lease now.
    expect(await b.drafts.acquireDraftLease(sessionId, 'server-c', 60_000)).toMatchObject({
      granted: false,
      holder: 'server-b',
    });
  });

  it('a server whose lease ran out and was taken over lets the draft go: its next prompt is refused naming the new holder', async () => {
    const where = await setting();
    // A TTL of 0: A's lease runs out at once, as a stalled server's would.
    const a = await startServer(
      where,
      'server-a',
      createScriptedBackend({ idPrefix: 'a', turns: [[step.text('From A.')]] }),
      0,
    );
    const b = await startServer(
      where,
      'server-b',
      createScriptedBackend({ idPrefix: 'b', turns: [[step.text('From B.')]] }),
      60_000,
    );
    const task = await a.service.createTask({ project: 'shop', title: 'Shared' });
    const { sessionId } = await a.service.draft({ channelId: 'tui', role: 'dev', project: 'shop', task: task.slug });
    await a.service.submitPrompt({ channelId: 'tui', content: 'hello A' });
    await a.service.settled({ channelId: 'tui' });

    expect(await b.service.submitPrompt({ channelId: 'tui', content: 'hello B' })).toMatchObject({ sessionId });
    await b.service.settled({ channelId: 'tui' });
    const refused = await a.service
      .submitPrompt({ channelId: 'tui', content: 'hello again A' })
      .catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'DRAFT_RUN_ELSEWHERE', data: { holder: 'server-b' } });
    expect(shape((await b.manager.loadConversation(sessionId)).blocks)).toEqual([
      'user_message:hello A',
      'assistant_text:From A.',
      'user_message:hello B',
      'assistant_text:From B.',
    ]);
  });
  /** Asked again until `check` holds: another server acts on its own timer (a lease renewal). */
  async function eventually<T>(ask: () => Promise<T>, check: (value: T) => boolean, what: string): Promise<T> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const value = await ask();
      if (check(value)) return value;
      if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  it("any server answers for a channel's draft: its role, task, metrics, running turn and the server that runs it", async () => {
    const where = await setting();
    const hold = gate();
    const a = await startServer(
      where,
      'server-a',
      createScriptedBackend({
        idPrefix: 'a',
        turns: [
          [step.text('From A.'), step.cost(0.25)],
          [step.text('Thinking'), step.wait(hold.promise), step.text(' done.')],
        ],
      }),
      60_000,
    );
    const b = await startServer(where, 'server-b', createScriptedBackend({ idPrefix: 'b', turns: [] }), 60_000);
    const task = await a.service.createTask({ project: 'shop', title: 'Login' });
    const { sessionId } = await a.service.draft({ channelId: 'tui', role: 'dev', project: 'shop', task: task.slug });
    await a.service.submitPrompt({ channelId: 'tui', content: 'hello A' });
    await a.service.settled({ channelId: 'tui' });

    const seen = await b.service.getDraftStatus({ channelId: 'tui' });
    expect(seen).toMatchObject({
      active: true,
      session: {
        sessionId,
        role: 'dev',
        taskSlug: task.slug,
        project: 'shop',
        channelId: 'tui',
        status: 'active',
        turnCount: 1,
        turnRunning: false,
        activeAgents: 0,
        runBy: { server: 'server-a', here: false },
      },
    });
    expect(seen.session!.cumulativeCostUsd).toBeCloseTo(0.25, 10);
    expect(Date.parse(seen.session!.runBy!.leaseExpiresAt!)).toBeGreaterThan(Date.now());
    // The server that runs it says so of itself, and both agree on the record.
    const own = await a.service.getDraftStatus({ channelId: 'tui' });
    expect(own.session!.runBy).toEqual({ server: 'server-a', here: true });
    const { runBy: _a, ...ownRest } = own.session!;
    const { runBy: _b, leaseExpiresAt: _c, ...seenRest } = { ...seen.session!, leaseExpiresAt: undefined };
    expect(seenRest).toEqual(ownRest);

    // A turn streaming on A shows as running on B, read from the shared log.
    let streamed = false;
    a.service.on('channel_message', ({ event }) => {
      if (event.type === 'block_complete' && event.block.type === 'assistant_text') streamed = true;
    });
    await a.service.submitPrompt({ channelId: 'tui', content: 'think' });
    await until(() => streamed, 'the partial answer to be stored');
    expect((await b.service.getDraftStatus({ channelId: 'tui' })).session).toMatchObject({ turnRunning: true });
    hold.open();
    await a.service.settled({ channelId: 'tui' });
    expect((await b.service.getDraftStatus({ channelId: 'tui' })).session).toMatchObject({
      turnRunning: false,
      turnCount: 2,
    });

    // Drafting again through B is refused (the channel has its draft), and says what holds it.
    const again = await b.service
      .draft({ channelId: 'tui', role: 'dev', project: 'shop', task: task.slug })
      .catch((error: unknown) => error);
    expect(again).toMatchObject({ code: 'DRAFT_ALREADY_ACTIVE' });

    // After A stops gracefully nobody runs it: B still shows it, with no server, and no turn running.
    await a.close();
    const free = await b.service.getDraftStatus({ channelId: 'tui' });
    expect(free).toMatchObject({ active: true, session: { sessionId, turnCount: 2, turnRunning: false } });
    expect(free.session!.runBy).toBeUndefined();
    expect(await b.service.getDraftStatus({ channelId: 'elsewhere' })).toEqual({ active: false });
  });

  it('undraft through another server closes the draft a live server runs; that server lets it go, and the channel drafts again', async () => {
    const where = await setting();
    // A short TTL, so A renews (and finds the draft gone) soon; A stays alive throughout.
    const a = await startServer(
      where,
      'server-a',
      createScriptedBackend({ idPrefix: 'a', turns: [[step.text('From A.'), step.cost(0.5)]] }),
      300,
    );
    const b = await startServer(
      where,
      'server-b',
      createScriptedBackend({ idPrefix: 'b', turns: [[step.text('From B.')]] }),
      60_000,
    );
    const task = await a.service.createTask({ project: 'shop', title: 'Login' });
    const { sessionId } = await a.service.draft({ channelId: 'tui', role: 'dev', project: 'shop', task: task.slug });
    await a.service.submitPrompt({ channelId: 'tui', content: 'hello A' });
    await a.service.settled({ channelId: 'tui' });

    const summary = await b.service.undraft({ channelId: 'tui' });
    expect(summary).toMatchObject({ sessionId, taskSlug: task.slug, turns: 1, cost: 0.5 });
    expect(await b.drafts.getDraft('shop', task.slug)).toMatchObject({
      sessionId,
      status: 'closed',
      closeReason: 'undraft',
      turnCount: 1,
    });
    expect(await b.service.getDraftStatus({ channelId: 'tui' })).toEqual({ active: false });
    await eventually(
      () => a.service.getDraftStatus({ channelId: 'tui' }),
      (status) => !status.active,
      'server A to let the closed draft go',
    );
    const refused = await a.service
      .submitPrompt({ channelId: 'tui', content: 'still there?' })
      .catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'NO_ACTIVE_DRAFT' });
    // Undrafting twice: nothing is left to close.
    expect(await b.service.undraft({ channelId: 'tui' }).catch((error: unknown) => error)).toMatchObject({
      code: 'NO_ACTIVE_DRAFT',
    });

    // The channel and the task are free: B drafts them again and runs the new draft.
    const next = await b.service.draft({ channelId: 'tui', role: 'dev', project: 'shop', task: task.slug });
    expect(next.sessionId).not.toBe(sessionId);
    expect((await a.service.getDraftStatus({ channelId: 'tui' })).session).toMatchObject({
      sessionId: next.sessionId,
      runBy: { server: 'server-b', here: false },
    });
    // The history of the closed draft stays readable.
    expect(shape((await b.manager.loadConversation(sessionId)).blocks)).toEqual([
      'user_message:hello A',
      'assistant_text:From A.',
    ]);
  });

  it('undraft through another server of a draft nobody runs takes it over and closes it there', async () => {
    const where = await setting();
    const a = await startServer(
      where,
      'server-a',
      createScriptedBackend({ idPrefix: 'a', turns: [[step.text('From A.')]] }),
      60_000,
    );
    const b = await startServer(where, 'server-b', createScriptedBackend({ idPrefix: 'b', turns: [] }), 60_000);
    const task = await a.service.createTask({ project: 'shop', title: 'Login' });
    const { sessionId } = await a.service.draft({ channelId: 'tui', role: 'dev', project: 'shop', task: task.slug });
    await a.service.submitPrompt({ channelId: 'tui', content: 'hello A' });
    await a.service.settled({ channelId: 'tui' });
    await a.close();

    expect(await b.service.undraft({ channelId: 'tui' })).toMatchObject({ sessionId, turns: 1 });
    expect(await b.drafts.getDraft('shop', task.slug)).toMatchObject({ status: 'closed', closeReason: 'undraft' });
    expect(await b.drafts.readDraftLease(sessionId)).toBeUndefined();
  });
});
