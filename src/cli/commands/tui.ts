import { randomUUID } from 'node:crypto';
import { loadProjectAutomation } from '../hooks-wiring.js';
import { existsSync } from 'node:fs';
import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { ValidationError } from '../../conversation/index.js';
import type { ServerFile, TransportFactory, WebSocketLike } from '../../protocol/index.js';
import type { RunningServer } from '../../server/index.js';
import type { NoteLine } from '../../ui/tui/index.js';
import {
  draftLeaseFromEnvironment,
  openChosenDraftStore,
  openChosenStore,
  resolveDataDir,
  resolveStoreUrl,
} from '../options.js';
import { answers, processAlive, readServerFile } from '../project-server.js';
import { resolveServerBackends } from '../server-backends.js';
import { paintSplash } from '../splash.js';
import { MAX_LEASE_TTL_MS, prepareDataFolder, type DraftStore, type SessionStore } from '../../store/index.js';
import type * as TuiEntryModule from '../tui-entry.js';

/** The file in the data folder holding this project's TUI channel: the draft belongs to it, so a restarted TUI finds its draft again. */
export const CHANNEL_FILE = 'tui-channel';
/** Where the in-process server logs (the screen belongs to the TUI). */
export const SERVER_LOG_FILE = 'tui-server.log';

interface TuiOptions {
  url?: string;
  channel?: string;
  /** `--no-file-snapshots` (commander's negation): the server started here snapshots no files. */
  fileSnapshots?: boolean;
}

/**
 * `parley tui [--url URL] [--channel ID]`. Without `--url` it is the same as `parley` alone: the
 * TUI on this project's server, started in this process when none runs.
 *
 * Everything heavy (the server, the back ends, the UI) is imported lazily: the first frame is
 * painted before the server starts.
 */
export function register(program: Command): void {
  program
    .command('tui')
    .description(
      'Open the terminal UI on this project (attaching to its server, or starting one here), or on any server with --url',
    )
    .option(
      '--url <url>',
      'attach to a running server: its WebSocket URL with the token (ws://127.0.0.1:7433/rpc?token=…), or the web UI URL `parley serve` prints',
    )
    .option(
      '--channel <id>',
      "the channel to join; a draft belongs to a channel (default: this project's, kept in the data folder)",
    )
    .option(
      '--no-file-snapshots',
      "when a server is started here: don't snapshot the project's files around each turn (/rewind then restores the conversation only)",
    )
    .action(async (options: TuiOptions, command: Command) => openTui(command, options));
  program.addHelpText(
    'after',
    '\n`parley` with no command opens the terminal UI on the project in this folder (same as `parley tui`).',
  );
}

/**
 * Opens the TUI until the user quits. The default action of `parley` with no arguments, which passes
 * the eraser of the splash it painted before loading this module (`splash.ts`); without one, the
 * splash is painted here.
 */
export async function openTui(command: Command, options: TuiOptions = {}, splash?: () => void): Promise<void> {
  if (!process.stdin.isTTY || !process.stdout.isTTY) {
    throw new ValidationError(
      'The Parley TUI needs an interactive terminal (standard input and output are not a TTY here). Use `parley serve` to serve a project, or `parley chat "…"` for one turn from a script.',
    );
  }
  const program = command.parent ?? command;
  const version = program.version() ?? '';
  const projectRoot = process.cwd();
  const dataDir = resolveDataDir(command);
  const attach = options.url !== undefined ? parseServerUrl(options.url) : undefined;
  const channel = checkChannel(
    options.channel ?? attach?.channel ?? (attach ? `tui-${randomUUID()}` : await stableChannel(dataDir)),
  );

  const headline = `Parley ${version} · ${attach ? `attached to ${attach.wsUrl}` : `project ${basename(projectRoot)} (${projectRoot})`}`;
  const hint =
    "Type a message to start: with no draft, Parley drafts the project's default role for it. /help lists the commands. Tab completes, Esc interrupts a turn, Ctrl+C quits.";
  const eraseSplash = splash ?? paintSplash();
  const { runTui, protocol } = await loadTuiEntry();
  const host = new ServerHost(
    projectRoot,
    dataDir,
    () => openChosenStore(command),
    () => openChosenDraftStore(command, projectRoot, dataDir),
    resolveStoreUrl(command),
    options.fileSnapshots !== false,
  );
  const factory: TransportFactory = async (context) => {
    const target = attach ?? (await host.locate());
    const { WebSocket } = await import('ws');
    return protocol.webSocketTransport({
      url: target.wsUrl,
      token: target.token,
      channel,
      openTimeoutMs: 5_000,
      createSocket: (url) => new WebSocket(url, { maxPayload: 64 * 1024 * 1024 }) as unknown as WebSocketLike,
    })(context);
  };
  const client = new protocol.ProtocolClient({
    transport: factory,
    reconnect: { initialDelayMs: 250, maxDelayMs: 5_000 },
    onError: (error) => host.log('warn', `protocol: ${String(error)}`),
  });

  const banner: NoteLine[] = [
    { text: headline, bold: true },
    { text: hint, tone: 'dim' },
  ];
  eraseSplash();
  const tui = runTui({ client, banner, setTerminalTitle: true });
  host.onNotice = (notice) => tui.update({ notice });

  // Warnings printed to stderr would tear the screen: they go to the log instead.
  process.removeAllListeners('warning');
  process.on('warning', (warning) => host.log('warn', `${warning.name}: ${warning.message}`));
  const stop = () => tui.unmount();
  process.once('SIGTERM', stop);
  process.once('SIGHUP', stop);
  try {
    await tui.exited;
  } finally {
    process.off('SIGTERM', stop);
    process.off('SIGHUP', stop);
    client.close();
    await host.close();
  }
  process.stdout.write(
    `\u001b]2;\u0007Parley stopped. Your draft stays on channel ${channel}: run \`parley${attach ? ` tui --url … --channel ${channel}` : ''}\` again to continue.\n`,
  );
}

type TuiEntry = typeof TuiEntryModule;

/**
 * The UI and the protocol client: from the bundle `npm run build` makes (scripts/build-tui.mjs;
 * one file loads in a third of the time of its ~730 modules), or, from source or before a build
 * bundled them, from the modules themselves.
 */
async function loadTuiEntry(): Promise<TuiEntry> {
  const bundle = new URL('../tui-entry.bundle.js', import.meta.url);
  if (existsSync(fileURLToPath(bundle))) return (await import(bundle.href)) as TuiEntry;
  return import('../tui-entry.js');
}

/**
 * Paints the first frame at once, in plain ANSI, while Ink and React load (most of the gap between
 * the first paint and Ink's first frame in bench/tui.bench.ts): the title bar as it stands before
 * connecting. One short line, so its height is known whatever the terminal's width; Ink's first
 * frame replaces it.
 */
interface Target {
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
      import('../../server/index.js'),
      import('../run-service-wiring.js'),
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

const CHANNEL_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,199}$/;

function checkChannel(channel: string): string {
  if (!CHANNEL_PATTERN.test(channel) || channel.includes('..')) {
    throw new ValidationError(
      `The channel "${channel}" is not valid: use 1–200 letters, digits, ".", "_" or "-", not starting with "." or "-".`,
    );
  }
  return channel;
}

/** This project's channel, made once and kept in the data folder. */
async function stableChannel(dataDir: string): Promise<string> {
  const path = join(dataDir, CHANNEL_FILE);
  try {
    const saved = (await readFile(path, 'utf8')).trim();
    if (CHANNEL_PATTERN.test(saved) && !saved.includes('..')) return saved;
  } catch {
    // Not made yet.
  }
  const channel = `tui-${randomUUID()}`;
  await prepareDataFolder(dataDir);
  await writeFile(path, `${channel}\n`, { mode: 0o600 });
  return channel;
}

/** `ws://host:port/rpc?token=…` (or the web UI's `http://host:port/?token=…`) as the WebSocket URL, token and channel. */
export function parseServerUrl(value: string): Target & { channel?: string } {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ValidationError(
      `--url "${value}" is not a URL. Pass the server's WebSocket URL with its token, e.g. ws://127.0.0.1:7433/rpc?token=… (server.json in its data folder has both).`,
    );
  }
  const token = url.searchParams.get('token');
  if (!token) {
    throw new ValidationError(
      `--url "${value}" has no token. Add ?token=… (the token is in server.json in the server's data folder, and in the URL \`parley serve\` prints).`,
    );
  }
  if (url.protocol === 'http:' || url.protocol === 'https:') {
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    url.pathname = '/rpc';
  } else if (url.protocol !== 'ws:' && url.protocol !== 'wss:') {
    throw new ValidationError(`--url "${value}" must be a ws:// (or http://) URL.`);
  }
  const channel = url.searchParams.get('channel') ?? undefined;
  url.search = '';
  return { wsUrl: url.toString(), token, ...(channel ? { channel } : {}) };
}
