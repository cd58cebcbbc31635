import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import type { TransportFactory, WebSocketLike } from '../../protocol/index.js';
import type { NoteLine, RunningTui } from '../../ui/tui/index.js';
import { resolveDataDir, resolveStoreUrl } from '../global-options.js';
import { paintSplash } from '../splash.js';
import { invalidChannelMessage, isValidChannel, stableChannel } from '../tui-channel.js';
import type * as TuiEntryModule from '../tui-entry.js';
import type { ServerHost, Target } from '../tui-server-host.js';

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
 * Nothing heavy is imported before the first frame: the UI comes from its bundle, and the store,
 * the server and the back ends (`tui-server-host.ts`) load on the first connection, after the
 * prompt is on the screen. Even the conversation layer's errors are loaded only to be thrown.
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
    await refuse(
      'The Parley TUI needs an interactive terminal (standard input and output are not a TTY here). Use `parley serve` to serve a project, or `parley chat "…"` for one turn from a script.',
    );
  }
  const program = command.parent ?? command;
  const version = program.version() ?? '';
  const projectRoot = process.cwd();
  const dataDir = resolveDataDir(command);
  const attach = options.url !== undefined ? await parseServerUrl(options.url) : undefined;
  const named = options.channel ?? attach?.channel ?? (attach ? `tui-${randomUUID()}` : undefined);
  if (named !== undefined && !isValidChannel(named)) await refuse(invalidChannelMessage(named));
  // This project's own channel is read (or made, with the data folder) on the first connection.
  let channelRead: Promise<string> | undefined;
  const channel = (): Promise<string> =>
    (channelRead ??= (named !== undefined ? Promise.resolve(named) : stableChannel(dataDir)).catch((error: unknown) => {
      channelRead = undefined;
      throw error;
    }));

  const headline = `Parley ${version} · ${attach ? `attached to ${attach.wsUrl}` : `project ${basename(projectRoot)} (${projectRoot})`}`;
  const hint =
    "Type a message to start: with no draft, Parley drafts the project's default role for it. /help lists the commands. Tab completes, Esc interrupts a turn, Ctrl+C quits.";
  const eraseSplash = splash ?? paintSplash();
  const { runTui, protocol } = await loadTuiEntry();
  let tui: RunningTui | undefined;
  let hostLoad: Promise<ServerHost> | undefined;
  const loadHost = (): Promise<ServerHost> =>
    (hostLoad ??= Promise.all([import('../tui-server-host.js'), import('../options.js')]).then(
      ([{ ServerHost }, { openChosenStore, openChosenDraftStore }]) => {
        const host = new ServerHost(
          projectRoot,
          dataDir,
          () => openChosenStore(command),
          () => openChosenDraftStore(command, projectRoot, dataDir),
          resolveStoreUrl(command),
          options.fileSnapshots !== false,
        );
        host.onNotice = (notice) => tui?.update({ notice });
        return host;
      },
    ));
  const log = (level: string, message: string) => void loadHost().then((host) => host.log(level, message));
  const factory: TransportFactory = async (context) => {
    const [target, joined, { WebSocket }] = await Promise.all([
      attach ?? loadHost().then((host) => host.locate()),
      channel(),
      import('ws'),
    ]);
    return protocol.webSocketTransport({
      url: target.wsUrl,
      token: target.token,
      channel: joined,
      openTimeoutMs: 5_000,
      createSocket: (url) => new WebSocket(url, { maxPayload: 64 * 1024 * 1024 }) as unknown as WebSocketLike,
    })(context);
  };
  const client = new protocol.ProtocolClient({
    transport: factory,
    reconnect: { initialDelayMs: 250, maxDelayMs: 5_000 },
    onError: (error) => log('warn', `protocol: ${String(error)}`),
  });

  const banner: NoteLine[] = [
    { text: headline, bold: true },
    { text: hint, tone: 'dim' },
  ];
  eraseSplash();
  const running = runTui({ client, banner, setTerminalTitle: true });
  tui = running;

  // Warnings printed to stderr would tear the screen: they go to the log instead.
  process.removeAllListeners('warning');
  process.on('warning', (warning) => log('warn', `${warning.name}: ${warning.message}`));
  const stop = () => running.unmount();
  process.once('SIGTERM', stop);
  process.once('SIGHUP', stop);
  let joined: string | undefined;
  try {
    await running.exited;
  } finally {
    process.off('SIGTERM', stop);
    process.off('SIGHUP', stop);
    client.close();
    joined = await channel().catch(() => undefined);
    await (await hostLoad?.catch(() => undefined))?.close();
  }
  process.stdout.write(
    joined === undefined
      ? '\u001b]2;\u0007Parley stopped.\n'
      : `\u001b]2;\u0007Parley stopped. Your draft stays on channel ${joined}: run \`parley${attach ? ` tui --url … --channel ${joined}` : ''}\` again to continue.\n`,
  );
}

/** Throws the conversation layer's ValidationError, loaded only then: the first frame need not wait for that layer. */
async function refuse(message: string): Promise<never> {
  const { ValidationError } = await import('../../conversation/index.js');
  throw new ValidationError(message);
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

/** `ws://host:port/rpc?token=…` (or the web UI's `http://host:port/?token=…`) as the WebSocket URL, token and channel. */
export async function parseServerUrl(value: string): Promise<Target & { channel?: string }> {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return refuse(
      `--url "${value}" is not a URL. Pass the server's WebSocket URL with its token, e.g. ws://127.0.0.1:7433/rpc?token=… (server.json in its data folder has both).`,
    );
  }
  const token = url.searchParams.get('token');
  if (!token) {
    return refuse(
      `--url "${value}" has no token. Add ?token=… (the token is in server.json in the server's data folder, and in the URL \`parley serve\` prints).`,
    );
  }
  if (url.protocol === 'http:' || url.protocol === 'https:') {
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    url.pathname = '/rpc';
  } else if (url.protocol !== 'ws:' && url.protocol !== 'wss:') {
    return refuse(`--url "${value}" must be a ws:// (or http://) URL.`);
  }
  const channel = url.searchParams.get('channel') ?? undefined;
  url.search = '';
  return { wsUrl: url.toString(), token, ...(channel ? { channel } : {}) };
}
