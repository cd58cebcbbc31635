import { CHROMIUM_PATH } from '../../helpers/system-part.js';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import WebSocket from 'ws';
import { createScriptedBackend, type AgentBackend, type ScriptedBackend } from '../../../src/backends/index.js';
import { ProtocolClient, webSocketTransport, type WebSocketLike } from '../../../src/protocol/index.js';
import { startServer, type RunningServer, type ServerOptions } from '../../../src/server/index.js';
import type { Summarizer } from '../../../src/sessions/index.js';
import { buildWeb } from '../../../scripts/build-web.mjs';

/** Debian's Chromium (`apt-get install chromium`; .ci/run installs it). */
export const CHROMIUM = CHROMIUM_PATH;

/** Flags that keep Chromium off the network: this machine's network is closed (.library/env notes). */
const CHROMIUM_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-default-apps',
];

/** Where screenshots go (gitignored), to be looked at as a user would. */
export const SCREENSHOTS = join(import.meta.dirname, '..', '..', '..', 'test-results', 'web');

export interface WebHarness {
  server: RunningServer;
  backend: ScriptedBackend;
  root: string;
  dataDir: string;
  /** The project's name (the temp folder's); it has a task `first-task`. */
  project: string;
  browser: Browser;
  /** What compaction asks; tests swap it (e.g. for one that waits on a gate). */
  summarizer: { current: Summarizer };
  logs: Array<{ level: string; message: string }>;
  /** A page of its own (a new browser context: fresh sessionStorage) at 1440×900. */
  page(): Promise<Page>;
  /** A Node protocol client on its own channel (a second window, in effect). */
  client(): Promise<ProtocolClient>;
  close(): Promise<void>;
}

export const SUMMARY = {
  completed: ['Read src/app.ts and found the failing check'],
  inProgress: ['Fixing the date parser'],
  pending: ['Write a regression test', 'Update the changelog'],
  decisions: ['Keep the public API unchanged'],
  blockers: [],
};

/**
 * Builds the web bundle into a temp folder with the project's build script, starts the server in
 * this process on port 0 over a temp project (webRoot = that bundle, one scripted back end), and
 * launches headless Chromium through playwright-core. `extra` goes to the server (e.g. a `runService`);
 * `beforeStart` writes into the data folder before the server opens it.
 */
export async function startWebHarness(
  extra: Partial<ServerOptions> = {},
  options: { beforeStart?: (paths: { root: string; dataDir: string }) => Promise<void> } = {},
): Promise<WebHarness> {
  const root = await mkdtemp(join(tmpdir(), 'parley-web-'));
  const dataDir = join(root, '.parley');
  // What a server finds when it starts (a session written by an earlier run of it, say).
  await options.beforeStart?.({ root, dataDir });
  const webRoot = join(root, 'web');
  await buildWeb({ outDir: webRoot, sourcemap: false });
  await mkdir(SCREENSHOTS, { recursive: true });
  const backend = createScriptedBackend();
  const summarizer: { current: Summarizer } = { current: () => Promise.resolve(JSON.stringify(SUMMARY)) };
  const logs: Array<{ level: string; message: string }> = [];
  const server = await startServer({
    projectRoot: root,
    dataDir,
    port: 0,
    webRoot,
    backendFor: () => backend as AgentBackend,
    summarize: (request) => summarizer.current(request),
    log: (level, message) => logs.push({ level, message }),
    ...extra,
  });
  const project = (await server.drafts.listProjects()).find((entry) => entry.current)!.name;
  await server.drafts.createTask({ project, title: 'First task', slug: 'first-task' });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
  const clients: ProtocolClient[] = [];
  return {
    server,
    backend,
    root,
    dataDir,
    project,
    browser,
    summarizer,
    logs,
    async page() {
      const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: 'light' });
      const page = await context.newPage();
      // Under the test's own timeout, so a missing element fails with its selector named.
      page.setDefaultTimeout(15_000);
      page.on('pageerror', (error) => logs.push({ level: 'page', message: String(error) }));
      page.on('console', (message) => {
        if (message.type() === 'error' || message.type() === 'warning')
          logs.push({ level: `console.${message.type()}`, message: message.text() });
      });
      return page;
    },
    async client() {
      const client = new ProtocolClient({
        transport: webSocketTransport({
          url: server.wsUrl,
          token: server.token,
          createSocket: (url) => new WebSocket(url) as unknown as WebSocketLike,
        }),
        onError: () => {},
      });
      clients.push(client);
      await client.connect();
      return client;
    },
    async close() {
      for (const client of clients) client.close();
      await browser.close();
      await server.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}
