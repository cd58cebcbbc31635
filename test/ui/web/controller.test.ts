import { afterEach, describe, expect, it, vi } from 'vitest';
import { ProtocolClient, type DraftStatus } from '../../../src/protocol/index.js';
import { Controller } from '../../../src/ui/web/controller.js';
import { Store } from '../../../src/ui/web/store.js';
import { firstMessageTarget, initialState } from '../../../src/ui/web/index.js';
import { RecordedPeer } from '../tui/recorded-peer.js';
import { LogBuilder, sessionInfo } from './events.js';
import { HISTORY_PAGING } from '../../../src/ui/web/history-pages.js';

const sessionId = 'draft-session-1';
const project = {
  name: 'shop',
  path: '/home/user/shop',
  dataDir: '/home/user/shop/.parley',
  current: true,
  defaultRole: 'product-analyst',
};

function task(slug: string, title: string) {
  return {
    project: 'shop',
    slug,
    title,
    description: '',
    state: 'open',
    taskDir: `/home/user/shop/.parley/tasks/${slug}`,
    createdAt: '2026-11-21T07:00:00.000Z',
    updatedAt: '2026-11-21T07:00:00.000Z',
  };
}

function draftStatus(role: string, taskSlug: string): DraftStatus {
  return {
    sessionId,
    role,
    taskSlug,
    project: 'shop',
    channelId: 'web-1',
    taskDir: `/home/user/shop/.parley/tasks/${taskSlug}`,
    startedAt: '2026-11-21T07:00:00.000Z',
    lastActivityAt: '2026-11-21T07:00:00.000Z',
    turnCount: 0,
    status: 'active',
    cumulativeCostUsd: 0,
    lastInputTokens: 0,
    lastOutputTokens: 0,
    contextWindow: 200_000,
    maxOutputTokens: 8_192,
    backend: 'scripted',
    costUnknown: false,
    contextPct: 0,
    turnRunning: false,
    activeAgents: 0,
  } as DraftStatus;
}

/** A server for the page: one project, its tasks as created, a draft once `draft` is asked. */
function server(options: { defaultRole?: string; draftError?: string } = {}) {
  const peer = new RecordedPeer();
  const tasks: Array<ReturnType<typeof task>> = [];
  let drafted: DraftStatus | undefined;
  peer.handlers.set('subscribe', () => ({ all: true, sessionIds: [] }));
  peer.handlers.set('list_sessions', () => ({ sessions: [] }));
  peer.handlers.set('get_draft_status', () => (drafted ? { active: true, session: drafted } : { active: false }));
  peer.handlers.set('list_projects', () => ({
    projects: [{ ...project, defaultRole: options.defaultRole ?? 'product-analyst' }],
  }));
  peer.handlers.set('list_roles', () => ({ roles: [], errors: [] }));
  peer.handlers.set('list_tasks', () => ({ tasks }));
  const createTask = (params: Record<string, unknown>) => {
    const created = task(
      String(params['title'])
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '-'),
      String(params['title']),
    );
    tasks.push(created);
    return { task: created };
  };
  peer.handlers.set('create_task', createTask);
  peer.handlers.set('draft', (params) => {
    if (options.draftError)
      return { error: { code: -32001, message: options.draftError, data: { code: 'NOT_FOUND' } } };
    drafted = draftStatus(String(params['role']), String(params['task']));
    return { sessionId, taskSlug: params['task'], project: params['project'] };
  });
  peer.handlers.set('get_session', () => ({
    session: sessionInfo({
      sessionId,
      scope: { kind: 'draft', role: drafted?.role ?? 'x', project: 'shop', taskSlug: drafted?.taskSlug ?? 'x' },
    }),
    lastSeq: -1,
  }));
  peer.handlers.set('get_checkpoint', () => ({ current: null, versions: [] }));
  peer.handlers.set('preview_request', () => new Error('no preview here'));
  // A first message (`submit_prompt { draft }`): the server's default role into the task named or a new one.
  peer.handlers.set('submit_prompt', (params) => {
    const draft = params['draft'] as { project: string; task?: string } | undefined;
    if (!draft || drafted) return { mode: 'draft', accepted: true, sessionId, seq: 0 };
    const role = options.defaultRole ?? 'product-analyst';
    const created = draft.task === undefined ? createTask({ title: taskTitle(String(params['content'])) }) : undefined;
    const taskSlug = draft.task ?? created!.task.slug;
    if (options.draftError)
      return {
        error: {
          code: -32001,
          message: `${created ? `Created task ${taskSlug}, but could not draft ${role} on it` : `Could not draft ${role} on task ${taskSlug}`}: ${options.draftError} Your message was not sent.`,
          data: {
            code: 'NOT_FOUND',
            drafting: { step: 'draft', project: draft.project, role, taskSlug, createdTask: created !== undefined },
          },
        },
      };
    drafted = { ...draftStatus(role, taskSlug), turnRunning: true };
    return {
      mode: 'draft',
      accepted: true,
      sessionId,
      seq: 0,
      drafted: { role, project: draft.project, taskSlug, createdTask: created !== undefined },
    };
  });
  return peer;
}

const taskTitle = (content: string) => content.split('\n')[0]!;

const clients: ProtocolClient[] = [];
afterEach(() => {
  for (const client of clients.splice(0)) client.close();
});

async function page(peer: RecordedPeer): Promise<{ controller: Controller; store: Store }> {
  const client = new ProtocolClient({ transport: peer.factory, onError: () => {} });
  clients.push(client);
  const store = new Store(initialState());
  const controller = new Controller({ client, store, searchDelayMs: 0 });
  await controller.start();
  return { controller, store };
}

const asked = (peer: RecordedPeer, method: string) =>
  peer.requests.filter((request) => request.method === method).map((request) => request.params);

describe('the web page: a first message with no draft', () => {
  it('is offered once a project is chosen, naming the role the server gives', async () => {
    const { store } = await page(server({ defaultRole: 'dev' }));
    expect(firstMessageTarget(store.state)).toEqual({ project: 'shop', role: 'dev' });
  });

  it("sends the message in one call that drafts the project's default role into a new task, selects its session, and says so in one line", async () => {
    const peer = server();
    const { controller, store } = await page(peer);
    expect(await controller.submitFirstMessage('Fix the login bug\nIt fails after the redirect.')).toBe(true);
    expect(asked(peer, 'submit_prompt')).toEqual([
      { content: 'Fix the login bug\nIt fails after the redirect.', draft: { project: 'shop' } },
    ]);
    expect(asked(peer, 'create_task')).toEqual([]);
    expect(asked(peer, 'draft')).toEqual([]);
    expect(store.state.selectedId).toBe(sessionId);
    expect(store.state.draft?.sessionId).toBe(sessionId);
    expect(store.state.turnRunning).toBe(true);
    expect(store.state.catalog.task).toBe('fix-the-login-bug');
    expect(store.state.catalog.tasks.map((entry) => entry.slug)).toEqual(['fix-the-login-bug']);
    expect(store.state.notices.map((notice) => notice.text)).toEqual([
      "Created task fix-the-login-bug and drafted product-analyst on it (the project's default role; Undraft to change).",
    ]);
    // With a draft, no first message is offered any more.
    expect(firstMessageTarget(store.state)).toBeUndefined();
  });

  it('names the task chosen in the draft form, so the server drafts into it', async () => {
    const peer = server({ defaultRole: 'qa' });
    const { controller, store } = await page(peer);
    expect(await controller.createTask('shop', 'Release notes')).toBe(true);
    expect(firstMessageTarget(store.state)).toEqual({ project: 'shop', role: 'qa', task: 'release-notes' });
    expect(await controller.submitFirstMessage('Draft the notes for 2.0')).toBe(true);
    expect(asked(peer, 'submit_prompt')).toEqual([
      { content: 'Draft the notes for 2.0', draft: { project: 'shop', task: 'release-notes' } },
    ]);
    expect(asked(peer, 'create_task')).toHaveLength(1);
    expect(store.state.notices.at(-1)?.text).toBe(
      "Drafted qa on task release-notes (the project's default role; Undraft to change).",
    );
  });

  it('a second message while the first is on its way is not sent', async () => {
    const peer = server();
    const { controller } = await page(peer);
    const first = controller.submitFirstMessage('one');
    expect(await controller.submitFirstMessage('two')).toBe(false);
    expect(await first).toBe(true);
    expect(asked(peer, 'submit_prompt')).toEqual([{ content: 'one', draft: { project: 'shop' } }]);
  });

  it("a default role that does not exist: the server's error as it is, the task made is chosen, nothing is running", async () => {
    const peer = server({
      defaultRole: 'reviewer',
      draftError: 'No role "reviewer". Roles: dev, product-analyst, qa.',
    });
    const { controller, store } = await page(peer);
    expect(await controller.submitFirstMessage('Write the guide')).toBe(false);
    expect(store.state.notices.map((notice) => [notice.tone, notice.text])).toEqual([
      [
        'error',
        'Created task write-the-guide, but could not draft reviewer on it: No role "reviewer". Roles: dev, product-analyst, qa. Your message was not sent.',
      ],
    ]);
    expect(store.state.draft).toBeUndefined();
    expect(store.state.busy.draft).toBe(false);
    expect(store.state.turnRunning).toBe(false);
    // The task is chosen, so the next try drafts into it.
    expect(firstMessageTarget(store.state)).toEqual({ project: 'shop', role: 'reviewer', task: 'write-the-guide' });
  });
});

describe('the web page: a compaction that runs when the page opens the session', () => {
  const startedAt = '2026-11-21T07:00:00.000Z';
  const running = { startedAt, trigger: 'manual', tokensBefore: 42_000, summarizer: { kind: 'model' } };

  function compactingServer() {
    const peer = server();
    let compaction: typeof running | undefined = running;
    peer.handlers.set('get_session', () => ({
      session: sessionInfo({ sessionId, scope: { kind: 'draft', role: 'dev', project: 'shop', taskSlug: 'fix' } }),
      lastSeq: -1,
      ...(compaction ? { compaction } : {}),
    }));
    return { peer, end: () => (compaction = undefined) };
  }

  it("shows it from get_session when the session is selected, timed from the server's start, and clears it on compaction_completed", async () => {
    const { peer, end } = compactingServer();
    const { controller, store } = await page(peer);
    controller.select(sessionId);
    await vi.waitFor(() =>
      expect(store.state.view?.compaction).toEqual({
        trigger: 'manual',
        tokensBefore: 42_000,
        startedAt: Date.parse(startedAt),
      }),
    );
    expect(asked(peer, 'get_session')).toEqual([{ sessionId }]);
    end();
    peer.notify('compaction_completed', {
      sessionId,
      trigger: 'manual',
      version: 1,
      tokensBefore: 42_000,
      tokensAfter: 3_000,
    });
    await vi.waitFor(() => expect(store.state.view?.compaction).toBeUndefined());
  });

  it('after a reconnect, reads it again: a compaction that ended while the link was down no longer shows', async () => {
    const { peer, end } = compactingServer();
    const { controller, store } = await page(peer);
    controller.select(sessionId);
    await vi.waitFor(() => expect(store.state.view?.compaction).toBeDefined());
    end();
    peer.drop();
    await vi.waitFor(() => expect(asked(peer, 'get_session')).toHaveLength(2));
    await vi.waitFor(() => expect(store.state.view?.compaction).toBeUndefined());
  });

  it("drops get_session's answer when a compaction notice overtook it (the notice is newer)", async () => {
    const peer = server();
    let answer!: (value: unknown) => void;
    peer.handlers.set('get_session', () => new Promise((resolve) => (answer = resolve)));
    const { controller, store } = await page(peer);
    controller.select(sessionId);
    await vi.waitFor(() => expect(asked(peer, 'get_session')).toHaveLength(1));
    peer.notify('compaction_completed', {
      sessionId,
      trigger: 'manual',
      version: 1,
      tokensBefore: 42_000,
      tokensAfter: 3_000,
    });
    await vi.waitFor(() => expect(store.state.view?.lastCompaction).toBeDefined());
    answer({
      session: sessionInfo({ sessionId, scope: { kind: 'draft', role: 'dev', project: 'shop', taskSlug: 'fix' } }),
      lastSeq: -1,
      compaction: running,
    });
    await vi.waitFor(() => expect(store.state.view?.loading).toBe(false));
    await new Promise((resolve) => setImmediate(resolve));
    expect(store.state.view?.compaction).toBeUndefined();
  });
});

describe('the web page: opening a session whose log spans several pages', () => {
  it(`reads its last page of ${HISTORY_PAGING.pageSize.toLocaleString('en-US')} events only, then older pages one at a time as asked, every block once`, async () => {
    const { pageSize } = HISTORY_PAGING;
    const log = new LogBuilder(sessionId);
    // A user message and an answer per turn, two events each: two pages and a part.
    const turns = Math.ceil((pageSize * 2 + 10) / 2);
    for (let index = 0; index < turns; index += 1) {
      log.complete({ type: 'user_message', id: `u${index}`, content: `Question ${index}`, createdAt: 0 });
      log.complete({ type: 'assistant_text', id: `a${index}`, content: `Answer ${index}`, createdAt: 0 });
    }
    const peer = server();
    peer.handlers.set('get_events', async (params) => {
      const limit = Number(params['limit']);
      const lastSeq = log.events.at(-1)!.seq;
      if (params['beforeSeq'] !== undefined) {
        const below = log.events.filter((event) => event.seq < Number(params['beforeSeq']));
        return { events: below.slice(-limit), lastSeq, hasMore: below.length > limit };
      }
      const after = log.events.filter((event) => event.seq > Number(params['afterSeq'] ?? -1));
      return { events: after.slice(0, limit), lastSeq, hasMore: after.length > limit };
    });
    const { controller, store } = await page(peer);
    controller.select(sessionId);
    await vi.waitFor(() => expect(store.state.view?.loading).toBe(false));
    expect(store.state.view?.conversation.blocks.length).toBe(pageSize);
    expect(store.state.view?.conversation.blocks.at(-1)?.id).toBe(`a${turns - 1}`);
    expect(store.state.view?.place).toEqual({ atStart: false, atTail: true });
    expect(asked(peer, 'get_events')).toEqual([{ sessionId, beforeSeq: Number.MAX_SAFE_INTEGER, limit: pageSize }]);
    controller.loadOlderEvents();
    await vi.waitFor(() => expect(store.state.view?.conversation.blocks.length).toBe(pageSize * 2));
    controller.loadOlderEvents();
    await vi.waitFor(() => expect(store.state.view?.place?.atStart).toBe(true));
    const ids = store.state.view!.conversation.blocks.map((block) => block.id);
    expect(ids).toHaveLength(turns * 2);
    expect(ids[0]).toBe('u0');
    expect(new Set(ids).size).toBe(ids.length);
    const firstOfTail = log.events.at(-pageSize)!.seq;
    expect(asked(peer, 'get_events').map((params) => params['beforeSeq'])).toEqual([
      Number.MAX_SAFE_INTEGER,
      firstOfTail,
      firstOfTail - pageSize,
    ]);
  });
});
