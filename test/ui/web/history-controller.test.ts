import { describe, expect, it } from 'vitest';
import { RpcError, type DraftStatus, type ProtocolClient } from '../../../src/protocol/index.js';
import { HistoryController } from '../../../src/ui/web/history-controller.js';
import { initialState, reduce } from '../../../src/ui/web/index.js';
import { Store } from '../../../src/ui/web/store.js';
import { sessionInfo } from './events.js';

/** A client that answers each request from `answer` and records it. */
function fakeClient(answer: (method: string, params: Record<string, unknown>) => unknown) {
  const requests: Array<{ method: string; params: Record<string, unknown> }> = [];
  const client = {
    request: (method: string, params: Record<string, unknown>) => {
      requests.push({ method, params });
      try {
        return Promise.resolve(answer(method, params));
      } catch (error) {
        return Promise.reject(error as Error);
      }
    },
  } as unknown as ProtocolClient;
  return { client, requests };
}

function controller(answer: (method: string, params: Record<string, unknown>) => unknown) {
  const { client, requests } = fakeClient(answer);
  const store = new Store(reduce(initialState(), { type: 'select', sessionId: 's1' }));
  const notices: string[] = [];
  const shown: string[] = [];
  const history = new HistoryController({
    client,
    store,
    notice: (_tone, text) => notices.push(text),
    select: () => undefined,
    reloadCheckpoints: () => Promise.resolve(),
    showDraft: (id) => {
      shown.push(id);
      return Promise.resolve();
    },
  });
  return { history, requests, notices, store, shown };
}

const rewound = {
  session: sessionInfo({ sessionId: 's1', scope: { kind: 'workflow', harness: 'test', agent: 'dev' } }),
  seq: 3,
  conversation: true,
};

describe('the web page’s history actions', () => {
  it('a rewind of both, from a user message, puts the files back to the message’s own seq first, then the conversation', async () => {
    const { history, requests } = controller((_method, params) =>
      params['restore'] === 'files' ? { ...rewound, conversation: false, files: { restored: ['notes.txt'] } } : rewound,
    );
    const outcome = await history.rewind({ to: 3, filesTo: 4, restore: 'both' });
    expect(outcome).toEqual({ ok: true, restoredFiles: ['notes.txt'] });
    expect(requests.map((request) => request.params)).toEqual([
      { sessionId: 's1', to: 4, restore: 'files' },
      { sessionId: 's1', to: 3, restore: 'conversation' },
    ]);
  });

  it('a refused file restore stops there, with the files the user changed, and the conversation is not asked', async () => {
    const { history, requests } = controller(() => {
      throw new RpcError(-32009, 'Restoring would overwrite 1 file(s).', {
        code: 'RESTORE_CONFLICT',
        files: ['notes.txt'],
      });
    });
    const outcome = await history.rewind({ to: 3, filesTo: 4, restore: 'both' });
    expect(outcome).toEqual({
      ok: false,
      code: 'RESTORE_CONFLICT',
      message: 'Restoring would overwrite 1 file(s).',
      files: ['notes.txt'],
    });
    expect(requests).toHaveLength(1);
  });

  it('says so when the files went back but the conversation was refused', async () => {
    const { history } = controller((_method, params) => {
      if (params['restore'] === 'files') return { ...rewound, conversation: false, files: { restored: [] } };
      throw new RpcError(-32006, 'A turn is running: cancel it first.', { code: 'TURN_IN_PROGRESS' });
    });
    const outcome = await history.rewind({ to: 3, filesTo: 4, restore: 'both', overwrite: true });
    expect(outcome).toMatchObject({
      ok: false,
      code: 'TURN_IN_PROGRESS',
      message: 'The files were restored, but the conversation was not: A turn is running: cancel it first.',
    });
  });

  it('a conversation rewind is one call, and overwrite goes only with files', async () => {
    const { history, requests } = controller(() => rewound);
    await history.rewind({ to: 'block-7', filesTo: 4, restore: 'conversation', overwrite: true });
    expect(requests.map((request) => request.params)).toEqual([
      { sessionId: 's1', to: 'block-7', restore: 'conversation' },
    ]);
  });

  it('lists branches only for a session that has branched', async () => {
    const { history, requests, store } = controller(() => ({ branches: [] }));
    const plain = sessionInfo({ sessionId: 's1', scope: { kind: 'workflow', harness: 'test', agent: 'dev' } });
    await history.loadBranches(plain, 's1');
    expect(requests).toEqual([]);
    await history.loadBranches({ ...plain, head: 2 }, 's1');
    expect(requests.map((request) => request.method)).toEqual(['list_branches']);
    expect(store.state.view?.branches).toEqual([]);
  });

  describe('a fork', () => {
    const draftScope = {
      kind: 'draft' as const,
      role: 'dev',
      project: 'shop',
      taskSlug: 'fix-cart',
      channelId: 'web-1',
    };
    const fork = sessionInfo({ sessionId: 'f1', scope: draftScope, forkedFrom: { sessionId: 's1', seq: 4 } });
    const thisWindowsDraft = {
      sessionId: 's1',
      role: 'dev',
      project: 'shop',
      taskSlug: 'fix-cart',
      status: 'active',
    } as DraftStatus;

    function answers(failing?: string) {
      return (method: string) => {
        if (method === failing) throw new RpcError(-32001, `${method} said no.`);
        if (method === 'fork_session') return { session: fork };
        if (method === 'undraft') return { taskSlug: 'fix-cart', turns: 2, cost: 0 };
        return { sessionId: 'f1' };
      };
    }

    it('of this window’s draft: undrafts, then drafts the same role, project and task on the fork', async () => {
      const { history, requests, store, shown, notices } = controller(answers());
      store.dispatch({ type: 'draft', status: thisWindowsDraft });
      expect(await history.forkSession(4)).toBeUndefined();
      expect(requests).toEqual([
        { method: 'fork_session', params: { sessionId: 's1', at: 4 } },
        { method: 'undraft', params: undefined },
        { method: 'draft', params: { role: 'dev', project: 'shop', task: 'fix-cart', session: 'f1' } },
      ]);
      expect(shown).toEqual(['f1']);
      expect(notices.at(-1)).toContain('the draft goes on in the fork');
    });

    it('says the draft was closed when drafting on the fork fails after the undraft', async () => {
      const { history, store, shown, notices } = controller(answers('draft'));
      store.dispatch({ type: 'draft', status: thisWindowsDraft });
      expect(await history.forkSession(4)).toBeUndefined();
      expect(store.state.draft).toBeUndefined();
      expect(shown).toEqual([]);
      expect(notices.at(-1)).toBe(
        'Drafting dev on session f1 failed: draft said no. The draft of the source was closed; draft again to go on.',
      );
      expect(store.state.busy.draft).toBe(false);
    });

    it('of a session this window does not draft: only opens the fork, and Continue here drafts on it', async () => {
      const { history, requests, store, shown, notices } = controller(answers());
      expect(await history.forkSession(4)).toBeUndefined();
      expect(requests.map((request) => request.method)).toEqual(['fork_session']);
      expect(notices.at(-1)).toContain('Continue here drafts on it.');
      store.dispatch({ type: 'select', sessionId: 'f1' });
      expect(await history.continueHere()).toBe(true);
      expect(requests.at(-1)).toEqual({
        method: 'draft',
        params: { role: 'dev', project: 'shop', task: 'fix-cart', session: 'f1' },
      });
      expect(shown).toEqual(['f1']);
    });

    it('Continue here is refused, with nothing asked, while this window has a draft', async () => {
      const { history, requests, store, notices } = controller(answers());
      store.dispatch({ type: 'session_updated', session: fork });
      store.dispatch({ type: 'select', sessionId: 'f1' });
      store.dispatch({ type: 'draft', status: thisWindowsDraft });
      expect(await history.continueHere()).toBe(false);
      expect(requests).toEqual([]);
      expect(notices.at(-1)).toBe('This window already has a draft: undraft it first, then continue here.');
    });
  });
});
