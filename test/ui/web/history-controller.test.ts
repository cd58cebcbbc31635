import { describe, expect, it } from 'vitest';
import { RpcError, type ProtocolClient } from '../../../src/protocol/index.js';
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
  const history = new HistoryController({
    client,
    store,
    notice: (_tone, text) => notices.push(text),
    select: () => undefined,
    reloadCheckpoints: () => Promise.resolve(),
  });
  return { history, requests, notices, store };
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
});
