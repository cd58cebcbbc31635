import { describe, expect, it } from 'vitest';
import { ParleyError } from '../../src/conversation/index.js';
import { RpcErrorCode } from '../../src/protocol/index.js';
import { Dispatcher, type Handlers, type LogLevel } from '../../src/server/index.js';

const context = { connectionId: 'c1', channelId: 'ch1' };

function dispatcherWith(serverInfo: Handlers['server_info']): {
  dispatcher: Dispatcher;
  logs: Array<{ level: LogLevel; message: string }>;
} {
  const logs: Array<{ level: LogLevel; message: string }> = [];
  const handlers = new Proxy({} as Handlers, {
    get: (_target, name) =>
      name === 'server_info' ? serverInfo : () => Promise.reject(new Error(`unexpected ${String(name)}`)),
  });
  return { dispatcher: new Dispatcher(handlers, (level, message) => logs.push({ level, message })), logs };
}

async function answer(
  dispatcher: Dispatcher,
  request: unknown,
  options = {},
): Promise<{
  id: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: Record<string, unknown> };
}> {
  return JSON.parse((await dispatcher.handleFrame(JSON.stringify(request), context, options))!) as never;
}

const call = { jsonrpc: '2.0', id: 7, method: 'server_info' };

describe('the dispatcher turns failures into JSON-RPC errors in one place', () => {
  it('an unexpected exception is INTERNAL_ERROR, without its details on the wire, and is logged', async () => {
    const { dispatcher, logs } = dispatcherWith(() => Promise.reject(new TypeError('secret internals at /home/x')));
    const reply = await answer(dispatcher, call);
    expect(reply.error?.code).toBe(RpcErrorCode.INTERNAL_ERROR);
    expect(reply.error?.message).not.toContain('secret');
    expect(logs).toHaveLength(1);
    expect(logs[0]!.level).toBe('error');
  });

  it('a typed error keeps its string code; one without a numeric mapping is SERVER_ERROR, not INTERNAL_ERROR', async () => {
    const { dispatcher, logs } = dispatcherWith(() =>
      Promise.reject(
        new ParleyError('SOMETHING_NEW', 'Something new went wrong with "x".', {
          fault: 'user',
          data: { code: 'spoofed', value: 'x' },
        }),
      ),
    );
    const reply = await answer(dispatcher, call);
    expect(reply.error).toEqual({
      code: RpcErrorCode.SERVER_ERROR,
      message: 'Something new went wrong with "x".',
      data: { code: 'SOMETHING_NEW', fault: 'user', value: 'x' },
    });
    expect(logs).toHaveLength(0);
  });

  it('a typed INVALID_INPUT is INVALID_PARAMS with the message as its issue', async () => {
    const { dispatcher } = dispatcherWith(() =>
      Promise.reject(new ParleyError('INVALID_INPUT', 'title: too long', { fault: 'user' })),
    );
    const reply = await answer(dispatcher, call);
    expect(reply.error?.code).toBe(RpcErrorCode.INVALID_PARAMS);
    expect(reply.error?.data?.['issues']).toEqual(['title: too long']);
  });

  it('while closing, new requests get SHUTTING_DOWN', async () => {
    const { dispatcher } = dispatcherWith(() => Promise.reject(new Error('must not run')));
    const reply = await answer(dispatcher, call, { closing: () => true });
    expect(reply.error?.code).toBe(RpcErrorCode.SHUTTING_DOWN);
  });

  it('a notification gets no answer even when it names an unknown method; an oversized batch is refused whole', async () => {
    const { dispatcher } = dispatcherWith(() => Promise.reject(new Error('must not run')));
    expect(await dispatcher.handleFrame(JSON.stringify({ jsonrpc: '2.0', method: 'nope' }), context)).toBeUndefined();
    const batch = Array.from({ length: 101 }, (_, id) => ({ ...call, id }));
    const reply = await answer(dispatcher, batch);
    expect(reply).toMatchObject({ id: null, error: { code: RpcErrorCode.INVALID_REQUEST } });
  });
});
