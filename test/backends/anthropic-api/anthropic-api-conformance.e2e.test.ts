import { createAnthropicApiBackend, type ToolDefinition } from '../../../src/backends/index.js';
import { errorReply, reply, startFakeAnthropicServer, toolUse } from '../../fixtures/fake-anthropic-server.js';
import { describeBackendConformance } from '../conformance.js';

const never = new Promise<never>(() => undefined);

const lookupTool: ToolDefinition = {
  name: 'lookup',
  description: 'Looks a key up.',
  inputSchema: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
  execute: (input) => Promise.resolve({ content: `value of ${(input as { key: string }).key}` }),
};

describeBackendConformance({
  name: 'anthropic-api',
  failureKinds: ['rate_limit', 'server_error'],
  differences: { resume: 'managed continuity: the Messages API is stateless, Parley rebuilds every request' },
  create: async () => {
    const server = await startFakeAnthropicServer();
    const backend = createAnthropicApiBackend({ apiKey: 'test-key', baseURL: server.url, maxRetries: 0 });
    return {
      backend,
      request: (fields) => ({ sessionId: 'anthropic-api-session', model: 'claude-haiku-4-5', ...fields }),
      script: {
        text: (text) => server.enqueue(reply(text, { chunkSize: 10 })),
        stall: (text) => server.enqueue(reply(text, { chunkSize: 10, hold: never })),
        failure: (kind) => {
          if (kind === 'rate_limit') {
            server.enqueue(
              errorReply(
                429,
                'rate_limit_error',
                'Number of request tokens has exceeded your per-minute rate limit',
                3,
              ),
            );
            return { code: 'RATE_LIMITED' };
          }
          server.enqueue(errorReply(500, 'api_error', 'Internal server error'));
          return { code: 'SERVER_ERROR' };
        },
        toolCall: (finalText) => {
          server.enqueue(reply([toolUse('lookup', { key: 'answer' })]), reply(finalText));
          return { request: { tools: [lookupTool] }, toolName: 'lookup' };
        },
      },
      teardown: () => server.close(),
    };
  },
});
