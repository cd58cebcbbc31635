import Anthropic, { APIError } from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  errorReply,
  reply,
  startFakeAnthropicServer,
  text,
  thinking,
  toolUse,
  type FakeAnthropicServer,
} from '../../fixtures/fake-anthropic-server.js';

/** The fixture itself, through the real client: the shapes the back ends rely on. */
let server: FakeAnthropicServer;
let client: Anthropic;
beforeAll(async () => {
  server = await startFakeAnthropicServer();
  client = new Anthropic({ apiKey: 'k', baseURL: server.url, maxRetries: 0 });
});
afterAll(() => server.close());

describe('fake Anthropic Messages API', () => {
  it('answers stream:false with one message object, tool ids filled in', async () => {
    server.enqueue(
      reply([text('Hi.'), toolUse('lookup', { key: 'a' })], { usage: { input_tokens: 12, output_tokens: 3 } }),
    );
    const message = await client.messages.create({
      model: 'claude-haiku-4-5',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(message).toMatchObject({
      type: 'message',
      role: 'assistant',
      stop_reason: 'tool_use',
      usage: { input_tokens: 12, output_tokens: 3 },
    });
    expect(message.content[1]).toMatchObject({
      type: 'tool_use',
      name: 'lookup',
      input: { key: 'a' },
      id: expect.stringMatching(/^toolu_/) as unknown,
    });
  });

  it('streams events the client assembles into the same message, thinking signature included', async () => {
    server.enqueue(reply([thinking('hmm', 'sig'), text('Streamed text.')]));
    const stream = client.messages.stream({
      model: 'claude-haiku-4-5',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'x' }],
    });
    const message = await stream.finalMessage();
    expect(message.content).toEqual([
      { type: 'thinking', thinking: 'hmm', signature: 'sig' },
      expect.objectContaining({ type: 'text', text: 'Streamed text.' }),
    ]);
    expect(message.stop_reason).toBe('end_turn');
  });

  it('answers count_tokens and records every request, query string and all', async () => {
    const counted = await client.messages.countTokens({
      model: 'claude-haiku-4-5',
      messages: [{ role: 'user', content: 'count me' }],
    });
    expect(counted.input_tokens).toBeGreaterThan(0);
    const last = server.requests.at(-1)!;
    expect(last.pathname).toBe('/v1/messages/count_tokens');
    expect(last.body?.messages).toEqual([{ role: 'user', content: 'count me' }]);
  });

  it('sends errors in the API body shape with retry-after on 429', async () => {
    server.enqueue(errorReply(429, 'rate_limit_error', 'slow down', 9));
    const error = await client.messages
      .create({ model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(APIError);
    const apiError = error as APIError;
    expect(apiError.status).toBe(429);
    expect(apiError.headers?.get('retry-after')).toBe('9');
    expect(apiError.error).toMatchObject({
      type: 'error',
      error: { type: 'rate_limit_error', message: 'slow down' },
      request_id: expect.any(String) as unknown,
    });
  });

  it('routes on the pathname only and answers unknown paths with a not_found_error', async () => {
    server.enqueue(reply('beta path'));
    const response = await fetch(`${server.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'system', content: 'any role is accepted' }] }),
    });
    expect(((await response.json()) as { content: unknown }).content).toEqual([{ type: 'text', text: 'beta path' }]);
    const missing = await fetch(`${server.url}/v1/models`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
  });
});
