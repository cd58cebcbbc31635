import { describe, expect, it } from 'vitest';
import {
  PendingApprovals,
  RpcError,
  type ApprovalClient,
  type ConnectionState,
  type PermissionRequest,
} from '../../src/protocol/index.js';

/**
 * `PendingApprovals` over a scripted client: what it lists after each connection, what the
 * notifications do to it, and how an answer that fails is reported (or not, when another client
 * answered first).
 */

function request(id: string): PermissionRequest {
  return {
    requestId: id,
    sessionId: 's1',
    tool: 'run_command',
    kind: 'command',
    title: `Run ${id}`,
    command: id,
    cwd: '.',
    requestedAt: '2026-11-21T07:00:00.000Z',
  };
}

class ScriptedClient {
  state: ConnectionState = 'disconnected';
  waiting: PermissionRequest[] = [];
  answers: Array<Record<string, unknown>> = [];
  failAnswer: Error | undefined;
  private readonly handlers = new Map<string, (params: unknown) => void>();
  private stateHandler: ((state: ConnectionState) => void) | undefined;

  on(name: string, handler: (params: unknown) => void): () => void {
    this.handlers.set(name, handler);
    return () => this.handlers.delete(name);
  }
  onStateChange(handler: (state: ConnectionState) => void): () => void {
    this.stateHandler = handler;
    return () => (this.stateHandler = undefined);
  }
  request(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    if (method === 'get_permissions') return Promise.resolve({ requests: [...this.waiting] });
    if (method === 'answer_permission') {
      this.answers.push(params);
      if (this.failAnswer) return Promise.reject(this.failAnswer);
      return Promise.resolve({
        requestId: params['requestId'],
        sessionId: params['sessionId'],
        decision: params['decision'],
      });
    }
    return Promise.reject(new Error(`unexpected ${method}`));
  }
  emit(name: string, params: unknown): void {
    this.handlers.get(name)?.(params);
  }
  connected(): void {
    this.state = 'connected';
    this.stateHandler?.('connected');
  }
}

async function flush(): Promise<void> {
  for (let i = 0; i < 5; i += 1) await Promise.resolve();
}

function start(client: ScriptedClient): PendingApprovals {
  const pending = new PendingApprovals(client as unknown as ApprovalClient);
  pending.start();
  return pending;
}

describe('PendingApprovals', () => {
  it('reads the waiting requests on every connection, adds pushed ones once, and drops resolved ones', async () => {
    const client = new ScriptedClient();
    client.waiting = [request('a')];
    const pending = start(client);
    client.connected();
    await flush();
    expect(pending.getState().requests.map((entry) => entry.requestId)).toEqual(['a']);
    client.emit('permission_requested', { channelId: 'c', request: request('b') });
    client.emit('permission_requested', { channelId: 'c', request: request('b') });
    expect(pending.getState().requests.map((entry) => entry.requestId)).toEqual(['a', 'b']);
    client.emit('permission_resolved', {
      channelId: 'c',
      sessionId: 's1',
      requestId: 'a',
      decision: 'deny',
      source: 'client',
    });
    expect(pending.getState().requests.map((entry) => entry.requestId)).toEqual(['b']);
    // Away and back: the server's list wins (b was answered meanwhile, c arrived).
    client.waiting = [request('c')];
    client.connected();
    await flush();
    expect(pending.getState().requests.map((entry) => entry.requestId)).toEqual(['c']);
    pending.stop();
    client.emit('permission_requested', { channelId: 'c', request: request('d') });
    expect(pending.getState().requests).toHaveLength(1);
  });

  it("answers with the request's session and removes it once taken", async () => {
    const client = new ScriptedClient();
    client.state = 'connected';
    client.waiting = [request('a')];
    const pending = start(client);
    await flush();
    await pending.answer('a', 'allow_always');
    expect(client.answers).toEqual([{ sessionId: 's1', requestId: 'a', decision: 'allow_always' }]);
    expect(pending.getState()).toEqual({ requests: [] });
    // Unknown requests are not sent.
    await pending.answer('zzz', 'deny');
    expect(client.answers).toHaveLength(1);
  });

  it('reports a failed answer and keeps the request; says nothing when another client answered first', async () => {
    const client = new ScriptedClient();
    client.state = 'connected';
    client.waiting = [request('a'), request('b')];
    const pending = start(client);
    await flush();
    client.failAnswer = new RpcError(-32001, 'No approval request a is waiting.');
    await pending.answer('a', 'deny');
    expect(pending.getState().requests.map((entry) => entry.requestId)).toEqual(['a', 'b']);
    expect(pending.getState().error).toBe('Could not answer "Run a": No approval request a is waiting.');
    expect(pending.getState().answering).toBeUndefined();

    // b: answered elsewhere while this answer was on its way.
    let fail!: (error: Error) => void;
    client.request = (method: string) =>
      method === 'answer_permission'
        ? new Promise((_resolve, reject) => (fail = reject))
        : Promise.resolve({ requests: [] });
    const answering = pending.answer('b', 'allow_once');
    expect(pending.getState().answering).toBe('b');
    client.emit('permission_resolved', {
      channelId: 'c',
      sessionId: 's1',
      requestId: 'b',
      decision: 'deny',
      source: 'client',
    });
    fail(new Error('already answered'));
    await answering;
    expect(pending.getState().requests.map((entry) => entry.requestId)).toEqual(['a']);
    expect(pending.getState().error).toBeUndefined();
  });
});
