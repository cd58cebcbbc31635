import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createScriptedBackend, step, type AgentBackend } from '../../../src/backends/index.js';
import { ProtocolClient, webSocketTransport, type WebSocketLike } from '../../../src/protocol/index.js';
import { startServer, type RunningServer } from '../../../src/server/index.js';
import { renderApp, type AppRig } from './app-rig.js';

/**
 * A conversation between agents streams to the terminal UI: the whole app, on a real
 * server in this process over WebSocket, attached to the channel of an analyst's draft (scripted
 * back end). The analyst opens a conversation with a dev (another scripted back end) and waits;
 * the thread shows live, the user's `/say` note reaches the dev, the dev's reply streams into the
 * running thread, and the finished thread prints to history with its reply and how it ended.
 */

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function socket(server: RunningServer, channel?: string) {
  return webSocketTransport({
    url: server.wsUrl,
    token: server.token,
    ...(channel !== undefined ? { channel } : {}),
    createSocket: (url) => new WebSocket(url) as unknown as WebSocketLike,
  });
}

describe('a conversation between agents in the terminal UI', () => {
  it('streams the thread live, takes a /say note and shows the dev’s reply', async () => {
    const root = await mkdtemp(join(tmpdir(), 'parley-tui-conversation-'));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    const dataDir = join(root, '.parley');
    await mkdir(join(dataDir, 'roles'), { recursive: true });
    await writeFile(
      join(dataDir, 'roles', 'dev.md'),
      '---\ndescription: Developer\nbackend: dev-backend\n---\nYou implement tasks.\n',
    );
    const analyst = createScriptedBackend({ idPrefix: 'analyst' });
    const dev = createScriptedBackend({
      idPrefix: 'dev',
      defaultTurn: () => [step.text('Dev: an in-memory LRU will do.')],
    });
    const server = await startServer({
      projectRoot: root,
      dataDir,
      port: 0,
      backendFor: (name) => (name === 'dev-backend' ? dev : analyst) as AgentBackend,
      summarize: false,
      log: () => {},
    });
    cleanups.push(() => server.close());
    const project = (await server.drafts.listProjects()).find((entry) => entry.current)!.name;
    await server.drafts.createTask({ project, title: 'Caching', slug: 'caching' });
    const driver = new ProtocolClient({ transport: socket(server), onError: () => {} });
    cleanups.push(() => driver.close());
    await driver.connect();
    const { sessionId } = await driver.request('draft', { role: 'product-analyst', project, task: 'caching' });

    const ref = { conversationId: '' };
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    cleanups.push(() => release());
    let releaseSecond!: () => void;
    const second = new Promise<void>((resolve) => (releaseSecond = resolve));
    cleanups.push(() => releaseSecond());
    server.manager.on('session:event', ({ sessionId: from, event }) => {
      if (from === sessionId && event.type === 'block_start' && event.block.type === 'subagent')
        ref.conversationId = event.block.subagentId;
    });
    analyst.enqueue([
      step.tool('open_conversation', { role: 'dev', topic: 'Caching strategy' }),
      { type: 'wait', until: gate },
      step.tool('say', {
        get conversationId() {
          return ref.conversationId;
        },
        message: 'Redis or memory?',
      }),
      { type: 'wait', until: second },
      step.tool('close_conversation', {
        get conversationId() {
          return ref.conversationId;
        },
      }),
      step.text('We cache in memory.'),
    ]);

    // The terminal UI joins the draft's channel, as `parley chat` reattaching would.
    const app: AppRig = renderApp({ factory: socket(server, driver.channelId!) });
    cleanups.push(() => app.stop());
    await app.waitFor('product-analyst');
    await app.type('Discuss caching with a developer.');
    await app.waitFor('conversation with dev');
    expect(ref.conversationId).not.toBe('');

    // The thread is live (a running worker line) while the analyst waits; the note is taken.
    await app.waitFor(/conversation with dev worker · running/);
    await app.type('/say dev Keep it in memory for now.');
    await app.waitFor('Noted in the conversation with dev');
    // Details on (Ctrl+O): threads print in full.
    await app.press('\u000f');
    release();
    // The dev's reply streams into the live thread while the conversation is still open.
    await app.waitFor(/conversation with dev worker · running .*│ Dev: an in-memory LRU will do\./);
    releaseSecond();
    await app.waitFor('We cache in memory.', 10_000);
    await server.drafts.settled({ channelId: driver.channelId! });
    expect(dev.calls[0]!.prompt).toContain('[A note from the user to both of you: Keep it in memory for now.]');
    // The finished thread is printed to history with its reply and its end.
    await app.waitFor(
      /conversation with dev worker · done .*│ Dev: an in-memory LRU will do\. ⎿ 1 message\(s\); closed: closed/,
    );
  }, 60_000);
});
