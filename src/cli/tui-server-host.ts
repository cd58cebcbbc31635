import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunningServer } from '../server/index.js';
import { loadProjectAutomation } from './hooks-wiring.js';
import { draftLeaseFromEnvironment } from './options.js';
import { answers, processAlive, readServerFile } from './project-server.js';
import { resolveServerBackends } from './server-backends.js';
import { MAX_LEASE_TTL_MS, prepareDataFolder, type DraftStore, type SessionStore } from '../store/index.js';

/*
 * The TUI's side of its project's server: found or started on the first connection, so
 * `commands/tui.ts` loads this module (and the store, the hooks and the server behind it) after
 * the first frame is on the screen, not before.
 */

/** Where the in-process server logs (the screen belongs to the TUI). */
export const SERVER_LOG_FILE = 'tui-server.log';

/** A server to connect to: its WebSocket URL and token. */
export interface Target {
  wsUrl: string;
  token: string;
}

/**
 * Finds this project's server: the one `server.json` names when its process is alive, or else one
 * started in this process (which stops when the TUI quits). Asked again on every reconnect, so a
 * TUI attached to a server that restarts (on whatever port) finds it again. Exported for its tests.
 */
export class ServerHost {
  private owned: RunningServer | undefined;
  private attached = false;
  private starting: Promise<RunningServer> | undefined;
  onNotice: ((notice: string) => void) | undefined;

  constructor(
    private readonly projectRoot: string,
    private readonly dataDir: string,
    /** The PostgreSQL store `--store` names, or undefined: the file store in the data folder. */
    private readonly openStore: () => Promise<SessionStore | undefined>,
    private readonly openDraftStore: () => Promise<DraftStore | undefined> = () => Promise.resolve(undefined),
    /** The PostgreSQL URL of that store: the server's durable runs go into the same database. */
    private readonly storeUrl: string | undefined = undefined,
    /** Snapshot the project's files around turns, as `parley serve` does, so /rewind can restore them. */
    private readonly fileSnapshots = true,
  ) {}
  private store: SessionStore | undefined;
  private draftStore: DraftStore | undefined;

  async locate(): Promise<Target> {
    if (this.owned) return this.owned;
    const file = await readServerFile(this.dataDir);
    // A live pid is not enough the first time (it may have been reused after a crash): the server must answer.
    if (file && file.pid !== process.pid && processAlive(file.pid) && (this.attached || (await answers(file)))) {
      this.attached = true;
      return { wsUrl: file.wsUrl, token: file.token };
    }
    // Attached to a server that went away: wait for it to come back (a restart) rather than take its data folder.
    if (this.attached)
      throw new Error(
        `The project's server (${join(this.dataDir, 'server.json')}) is not running; waiting for it to start again.`,
      );
    return this.start();
  }

  private start(): Promise<RunningServer> {
    this.starting ??= this.startServer().then(
      (server) => {
        this.owned = server;
        return server;
      },
      (error: unknown) => {
        this.starting = undefined;
        throw error;
      },
    );
    return this.starting;
  }

  private async startServer(): Promise<RunningServer> {
    // Loaded when a server is started here, not with the TUI: the harness layers behind the run
    // service are a quarter of a second of start-up that Ink's first frame need not wait for.
    const [{ startServer }, { coreRunServiceFactory, serveRuns }] = await Promise.all([
      import('../server/index.js'),
      import('./run-service-wiring.js'),
    ]);
    const { backendFor, summarize, notice, warnings } = await resolveServerBackends({
      projectRoot: this.projectRoot,
      dataDir: this.dataDir,
    });
    for (const warning of warnings) void this.log('warn', warning);
    const { hooks, notifier } = await loadProjectAutomation(this.projectRoot, (line) => void this.log('warn', line));
    const leaseTtlMs = draftLeaseFromEnvironment(MAX_LEASE_TTL_MS);
    const store = await this.openStore();
    const draftStore = await this.openDraftStore().catch(async (error: unknown) => {
      await store?.close();
      throw error;
    });
    let server: RunningServer;
    try {
      server = await startServer({
        projectRoot: this.projectRoot,
        dataDir: this.dataDir,
        ...(store ? { store, ...(this.storeUrl !== undefined ? { storeUrl: this.storeUrl } : {}) } : {}),
        ...(draftStore ? { draftStore } : {}),
        ...(leaseTtlMs !== undefined ? { leaseTtlMs } : {}),
        port: 0,
        ...(this.fileSnapshots ? { fileSnapshots: {} } : {}),
        backendFor,
        summarize,
        ...(hooks ? { hooks } : {}),
        notifier,
        log: (level, message, fields) =>
          void this.log(level, `${message}${fields ? ` ${JSON.stringify(fields)}` : ''}`),
        createRunService: serveRuns(coreRunServiceFactory, (line) => void this.log('info', line)),
      });
    } catch (error) {
      await draftStore?.close();
      await store?.close();
      throw error;
    }
    this.store = store;
    this.draftStore = draftStore;
    if (notice) this.onNotice?.(notice);
    return server;
  }

  async log(level: string, message: string): Promise<void> {
    if (level === 'debug') return;
    try {
      await prepareDataFolder(this.dataDir);
      await appendFile(join(this.dataDir, SERVER_LOG_FILE), `${new Date().toISOString()} ${level} ${message}\n`);
    } catch {
      // Logging must never take the TUI down.
    }
  }

  async close(): Promise<void> {
    const server = this.owned ?? (await this.starting?.catch(() => undefined));
    await server?.close();
    await this.draftStore?.close();
    await this.store?.close();
  }
}
