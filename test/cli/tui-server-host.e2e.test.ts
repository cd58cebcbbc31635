import { existsSync, promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ServerHost } from '../../src/cli/tui-server-host.js';
import { ProtocolClient, webSocketTransport, type WebSocketLike } from '../../src/protocol/index.js';
import { createPostgresRunStore, createPostgresStore } from '../../src/store/index.js';
import { useTestDatabase } from '../helpers/postgres-database.js';

/**
 * The TUI's own server (`parley` with `--store postgres://…` and no server running) keeps durable
 * runs in the same database as its sessions, as `parley serve` does: none in the data folder.
 */
const database = useTestDatabase('parley_tui_host');
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const HARNESS = resolve('src/harness/index.js');

describe("the TUI's own server on PostgreSQL", () => {
  it('starts a durable run whose record and journal are in the database, not in the data folder', async () => {
    const root = await fs.mkdtemp(join(tmpdir(), 'parley-tui-host-'));
    cleanups.push(() => fs.rm(root, { recursive: true, force: true }));
    await fs.mkdir(join(root, 'workflows'));
    await fs.writeFile(
      join(root, 'workflows', 'ask.ts'),
      `import { defineHarness } from ${JSON.stringify(HARNESS)};\n` +
        `export default defineHarness({ name: 'ask', agents: {}, async run(context) { return (await context.session!.waitForUser('Ship it?')).content; } });\n`,
    );
    const dataDir = join(root, '.parley');
    const url = database.url();
    const host = new ServerHost(
      root,
      dataDir,
      () => createPostgresStore({ connectionString: url }),
      () => Promise.resolve(undefined),
      url,
    );
    cleanups.push(() => host.close());
    const target = await host.locate();
    const client = new ProtocolClient({
      transport: webSocketTransport({
        url: target.wsUrl,
        token: target.token,
        channel: 'tui-test',
        createSocket: (address) => new WebSocket(address) as unknown as WebSocketLike,
      }),
      reconnect: false,
      onError: () => {},
    });
    await client.connect();
    cleanups.push(async () => client.close());

    const started = await client.startRun({ workflow: 'workflows/ask.ts' });
    let run = await client.getRun(started.id);
    while (run.status !== 'waiting') run = await client.getRun(started.id);
    expect(run.pendingPrompts[0]).toMatchObject({ prompt: 'Ship it?' });

    const runs = await createPostgresRunStore({ connectionString: url, existingOnly: true });
    try {
      expect((await runs.getRun(started.id))?.status).toBe('waiting');
      expect((await runs.readJournal(started.id)).map((entry) => entry.kind)).toContain('prompt');
    } finally {
      await runs.close();
    }
    expect(existsSync(join(dataDir, 'runs'))).toBe(false);
  });
});
