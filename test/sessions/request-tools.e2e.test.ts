/**
 * The role's Tools section of a managed request names the tools that request carries, as the
 * model gets them: checked on the requests the real `openai` client sends to the fake server.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createOpenAiCompatibleBackend, type ToolDefinition } from '../../src/backends/index.js';
import type { StreamEvent } from '../../src/conversation/index.js';
import { createSessionManager, runTurn, type SessionManager } from '../../src/sessions/index.js';
import { createMemoryStore } from '../../src/store/index.js';
import { startFakeOpenAiServer, type FakeOpenAiServer } from '../fixtures/fake-openai-server.js';

const weatherTool: ToolDefinition = {
  name: 'get_weather',
  description: 'Weather for a city.',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  execute: () => Promise.resolve({ content: '20 °C' }),
};
const timeTool: ToolDefinition = {
  name: 'get_time',
  description: 'The time in a city.',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  execute: () => Promise.resolve({ content: '12:00' }),
};

let server: FakeOpenAiServer;
const managers: SessionManager[] = [];
beforeAll(async () => {
  server = await startFakeOpenAiServer();
});
afterAll(() => server.close());
afterEach(async () => {
  await Promise.all(managers.splice(0).map((manager) => manager.close()));
  server.requests.length = 0;
});

/** One turn of a new `agentType` session; returns the system prompt and the tool names the server got. */
async function sentRequest(
  agentType: string,
  tools: ToolDefinition[] | undefined,
): Promise<{ systemPrompt: string; toolNames: string[] }> {
  const manager = await createSessionManager({ store: createMemoryStore() });
  managers.push(manager);
  const { sessionId } = await manager.createSession({ scope: { kind: 'draft', role: agentType }, agentType });
  const backend = createOpenAiCompatibleBackend({
    baseURL: server.url,
    apiKey: 'dummy',
    model: 'fake-model',
    maxRetries: 0,
  });
  server.enqueue({ text: 'ok' });
  const turn = await runTurn(manager, sessionId, { backend, prompt: 'Hello', ...(tools ? { tools } : {}) });
  const events: StreamEvent[] = [];
  for await (const event of turn.events) events.push(event);
  const body = server.completions().at(-1)!;
  const messages = body['messages'] as Array<{ role: string; content: string }>;
  expect(messages[0]!.role).toBe('system');
  const sentTools = (body['tools'] ?? []) as Array<{ function: { name: string } }>;
  return { systemPrompt: messages[0]!.content, toolNames: sentTools.map((tool) => tool.function.name) };
}

/** The non-empty lines of the role's `## Tools` section. */
function toolLines(systemPrompt: string): string[] {
  const lines = systemPrompt.split('\n');
  const start = lines.indexOf('## Tools');
  if (start === -1) return [];
  const rest = lines.slice(start + 1);
  const end = rest.findIndex((line) => line.startsWith('#'));
  return (end === -1 ? rest : rest.slice(0, end)).filter((line) => line.trim() !== '');
}

describe('the tools a managed request names', () => {
  it('a request without tools names none, not the role’s defaults', async () => {
    const { systemPrompt, toolNames } = await sentRequest('product-analyst', undefined);
    expect(toolNames).toEqual([]);
    expect(systemPrompt).not.toContain('Allowed tools');
    expect(systemPrompt).not.toMatch(/\bRead\b|\bGlob\b|\bGrep\b/);
    expect(toolLines(systemPrompt)).toEqual(['No tools are available in this conversation.']);
  });

  it('a built-in role without tools loses the instructions about tools it does not have', async () => {
    const { systemPrompt } = await sentRequest('dev', []);
    expect(systemPrompt).toContain('# Your Role');
    expect(systemPrompt).not.toContain('Allowed tools');
    expect(systemPrompt).not.toContain('Use Read, Glob and Grep');
    expect(toolLines(systemPrompt)).toEqual(['No tools are available in this conversation.']);
  });

  it('a request with tools lists exactly those', async () => {
    const { systemPrompt, toolNames } = await sentRequest('dev', [weatherTool, timeTool]);
    expect(toolNames).toEqual(['get_weather', 'get_time']);
    expect(toolLines(systemPrompt)).toEqual(['Allowed tools: get_weather, get_time.']);
  });
});
