import { existsSync } from 'node:fs';
import { loadProjectAutomation } from '../hooks-wiring.js';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { ParleyError } from '../../conversation/index.js';
import type { RunningServer, TlsCredentials } from '../../server/index.js';
import type { TranscriptWatcher } from '../../sessions/index.js';
import {
  createFileScheduleStore,
  createPostgresScheduleStore,
  shareStore,
  type ScheduleStore,
  type SessionStore,
} from '../../store/index.js';
import {
  draftLeaseFromEnvironment,
  openChosenDraftStore,
  openChosenStore,
  resolveDataDir,
  resolveStoreUrl,
} from '../options.js';
import { coreRunServiceFactory, serveRuns, type CoreRunServiceFactory } from '../run-service-wiring.js';
import { resolveServerBackends } from '../server-backends.js';

/** The default port of `parley serve` (`--port 0` picks any free one). */
export const DEFAULT_PORT = 7433;

export { SCRIPTED_SCRIPT_VARIABLE } from '../server-backends.js';

/**
 * `parley serve`: serves the project in the current folder over JSON-RPC (WebSocket) and the web UI.
 * Prints the web UI's URL (with the token) and the WebSocket URL; writes server.json (mode 0600)
 * in the data folder; SIGTERM or SIGINT ends running turns cleanly, saves state and exits.
 * `--store postgres://…` (or PARLEY_DATABASE_URL) keeps sessions in PostgreSQL, where several
 * servers may share them live; the store is opened first, so a bad URL changes nothing.
 * PARLEY_DRAFT_LEASE_MS sets how long a draft lease lasts: how soon, after this server dies, another
 * takes its drafts over. `--session-idle` and `--max-live-sessions` bound the sessions kept in memory.
 */
export function register(
  program: Command,
  runServiceFactory: CoreRunServiceFactory | undefined = coreRunServiceFactory,
): void {
  program
    .command('serve')
    .description('Serve this project to the TUI and the web UI (JSON-RPC 2.0 over WebSocket)')
    .option('--port <port>', `port to listen on (default ${DEFAULT_PORT}; 0: any free port)`, parsePort)
    .option(
      '--host <host>',
      'address to listen on (default 127.0.0.1; anything else, e.g. 0.0.0.0, is reachable from the network and served over TLS)',
    )
    .option('--tls-cert <file>', 'serve https/wss with this certificate (PEM; with --tls-key)')
    .option('--tls-key <file>', 'the private key of --tls-cert (PEM)')
    .option(
      '--insecure-http',
      'beyond loopback, serve plain HTTP instead of TLS: tokens cross the network readable (a network you trust only)',
    )
    .option(
      '--session-idle <seconds>',
      'let a session unused this long go from memory, to be read from its log again when needed (default 600)',
      parseSessionIdle,
    )
    .option(
      '--max-live-sessions <count>',
      'keep at most this many sessions in memory, the least recently used going first (default: no bound)',
      parseMaxLiveSessions,
    )
    .option(
      '--no-file-snapshots',
      "don't snapshot the project's files around each turn (rewinds then restore the conversation only)",
    )
    .option('--web-root <dir>', 'folder of the web UI to serve (default: the built dist/web)')
    .option(
      '--watch-native',
      "follow this project's Claude Code, Gemini CLI and Codex sessions live: import them as they are written",
    )
    .action(
      async (
        options: {
          port?: number;
          host?: string;
          tlsCert?: string;
          tlsKey?: string;
          insecureHttp?: boolean;
          webRoot?: string;
          watchNative?: boolean;
          sessionIdle?: number;
          maxLiveSessions?: number;
          fileSnapshots?: boolean;
        },
        command: Command,
      ) => {
        // Loaded here, not at registration: other commands do not pay for the server's modules.
        const [{ startServer }, { MAX_LEASE_TTL_MS }] = await Promise.all([
          import('../../server/index.js'),
          import('../../store/index.js'),
        ]);
        // Checked before the store opens, so a bad value changes nothing.
        const leaseTtlMs = draftLeaseFromEnvironment(MAX_LEASE_TTL_MS);
        const projectRoot = process.cwd();
        const dataDir = resolveDataDir(command);
        const tls = await chooseTls(options, dataDir);
        const chosenStore = await openChosenStore(command);
        // With --watch-native the imports and the server share one opened store, each through its own view,
        // so the server sees the imported events as changes from elsewhere and delivers them (store/sessions/shared-store.ts).
        const shared = options.watchNative
          ? shareStore(
              chosenStore ??
                (await (
                  await import('../../sessions/index.js')
                ).openDataFolderStore(dataDir, (warning) =>
                  process.stderr.write(`parley store: ${warning.message}\n`),
                )),
            )
          : undefined;
        const store = shared !== undefined ? shared.view() : chosenStore;
        const draftStore = await openChosenDraftStore(command, projectRoot, dataDir).catch(async (error: unknown) => {
          await store?.close();
          await shared?.close();
          throw error;
        });
        // Schedules live beside the sessions: in the data folder, or in the same PostgreSQL database.
        const scheduleStore = await openScheduleStore(store ? resolveStoreUrl(command) : undefined, dataDir).catch(
          async (error: unknown) => {
            await draftStore?.close();
            await store?.close();
            await shared?.close();
            throw error;
          },
        );
        const { backendFor, summarize, notice, warnings } = await resolveServerBackends({ projectRoot, dataDir });
        if (notice) process.stderr.write(`parley: ${notice}\n`);
        for (const warning of warnings) process.stderr.write(`parley: ${warning}\n`);
        const { hooks, notifier } = await loadProjectAutomation(projectRoot, (line) =>
          process.stderr.write(`parley: ${line}\n`),
        );
        const webRoot = options.webRoot !== undefined ? resolve(options.webRoot) : defaultWebRoot();
        let server: RunningServer;
        try {
          server = await startServer({
            projectRoot,
            dataDir,
            ...(store ? { store, storeUrl: resolveStoreUrl(command)! } : {}),
            ...(draftStore ? { draftStore } : {}),
            ...(leaseTtlMs !== undefined ? { leaseTtlMs } : {}),
            ...(options.sessionIdle !== undefined ? { liveSessionIdleMs: options.sessionIdle * 1000 } : {}),
            ...(options.maxLiveSessions !== undefined ? { maxLiveSessions: options.maxLiveSessions } : {}),
            ...(options.fileSnapshots !== false ? { fileSnapshots: {} } : {}),
            port: options.port ?? DEFAULT_PORT,
            ...(options.host !== undefined ? { host: options.host } : {}),
            ...(tls ? { tls: tls.credentials } : {}),
            ...(options.insecureHttp ? { insecureHttp: true } : {}),
            ...(webRoot ? { webRoot } : {}),
            backendFor,
            summarize,
            ...(hooks ? { hooks } : {}),
            notifier,
            // Durable runs: unfinished runs are resumed before the server accepts connections.
            createRunService: serveRuns(runServiceFactory, (line) => process.stdout.write(`${line}\n`)),
            scheduleStore,
          });
        } catch (error) {
          await scheduleStore.close();
          await draftStore?.close();
          await store?.close();
          await shared?.close();
          if ((error as NodeJS.ErrnoException).code === 'EADDRNOTAVAIL') {
            throw new ParleyError(
              'INVALID_INPUT',
              `--host ${options.host ?? ''} is not an address of this machine. Give one of its addresses, or 0.0.0.0 for all of them.`,
              { fault: 'user' },
            );
          }
          if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
            throw new ParleyError(
              'PORT_IN_USE',
              `Port ${options.port ?? DEFAULT_PORT} is in use (another parley serve?). Choose one with --port, or --port 0 for any free port.`,
              { fault: 'user' },
            );
          }
          throw error;
        }
        if (server.recovered.recovered > 0)
          process.stdout.write(`Recovered ${server.recovered.recovered} active draft(s).\n`);
        const followers = shared !== undefined ? await followNativeSessions(projectRoot, shared.view()) : [];
        if (tls)
          process.stdout.write(
            `TLS: ${tls.selfSigned ? `a self-signed certificate Parley made with openssl (${join(dataDir, 'tls')})` : 'the certificate given'}; SHA-256 fingerprint:\n  ${server.tlsFingerprint}\n`,
          );
        process.stdout.write(
          `Parley is serving ${projectRoot}\n` +
            `  web UI:   ${server.url}\n` +
            `  JSON-RPC: ${server.wsUrl} (token and URL in ${join(dataDir, 'server.json')})\n` +
            `Parley server ready: ${server.url}\n`,
        );
        await waitForSignal(server);
        await Promise.all(followers.map((follower) => follower.stop()));
        await scheduleStore.close();
        await draftStore?.close();
        await store?.close();
        await shared?.close();
      },
    );
}

/** The schedule store of a server: PostgreSQL beside its sessions, or files in its data folder. */
async function openScheduleStore(storeUrl: string | undefined, dataDir: string): Promise<ScheduleStore> {
  return storeUrl !== undefined
    ? createPostgresScheduleStore({ connectionString: storeUrl })
    : createFileScheduleStore({ dataDir });
}

/**
 * The certificate to serve with: `--tls-cert`/`--tls-key` when given; beyond loopback without them
 * (and without --insecure-http), a self-signed one for every name the server is reached by.
 */
async function chooseTls(
  options: { host?: string; tlsCert?: string; tlsKey?: string; insecureHttp?: boolean },
  dataDir: string,
): Promise<{ credentials: TlsCredentials; selfSigned: boolean } | undefined> {
  if ((options.tlsCert === undefined) !== (options.tlsKey === undefined)) {
    throw new ParleyError('INVALID_INPUT', '--tls-cert and --tls-key go together: give both, or neither.', {
      fault: 'user',
    });
  }
  const server = await import('../../server/index.js');
  if (options.tlsCert !== undefined && options.tlsKey !== undefined) {
    const { readFile } = await import('node:fs/promises');
    const read = async (path: string, flag: string) => {
      try {
        return await readFile(resolve(path), 'utf8');
      } catch (error) {
        throw new ParleyError('INVALID_INPUT', `${flag} ${path} cannot be read: ${(error as Error).message}`, {
          fault: 'user',
        });
      }
    };
    const credentials = {
      cert: await read(options.tlsCert, '--tls-cert'),
      key: await read(options.tlsKey, '--tls-key'),
    };
    try {
      server.certificateFingerprint(credentials.cert);
    } catch (error) {
      throw new ParleyError(
        'INVALID_INPUT',
        `--tls-cert ${options.tlsCert} is not a PEM certificate: ${(error as Error).message}`,
        {
          fault: 'user',
        },
      );
    }
    return { credentials, selfSigned: false };
  }
  const host = options.host ?? '127.0.0.1';
  if (server.isLoopback(host) || options.insecureHttp) return undefined;
  const { mkdir } = await import('node:fs/promises');
  await mkdir(dataDir, { recursive: true });
  return { credentials: await server.selfSignedCertificate(dataDir, server.reachableNames(host)), selfSigned: true };
}

/** `--watch-native`: a watcher per native folder of the project; a folder that does not exist yet is followed from when it appears. */
async function followNativeSessions(projectRoot: string, store: SessionStore): Promise<TranscriptWatcher[]> {
  const { nativeSessionFolders, watchTranscripts } = await import('../../sessions/index.js');
  const folders = await nativeSessionFolders(projectRoot);
  const followers: TranscriptWatcher[] = [];
  for (const folder of folders) {
    const follower = watchTranscripts(folder.path, {
      store,
      waitForPath: true,
      ...(folder.sharedByProjects === true ? { projectRoot } : {}),
      onSync: (result) => {
        for (const session of result.sessions) {
          if (session.status !== 'unchanged')
            process.stdout.write(
              `parley: ${session.status === 'imported' ? 'following' : 'updated'} ${session.sessionId} (${folder.source}) ${JSON.stringify(session.title)}\n`,
            );
        }
      },
      onWarning: (warning) => process.stderr.write(`parley: ${folder.path}: ${warning.message}\n`),
      onError: (error) =>
        process.stderr.write(
          `parley: following ${folder.path}: ${error instanceof Error ? error.message : String(error)}\n`,
        ),
    });
    followers.push(follower);
    await follower.ready;
  }
  process.stdout.write(
    `Following native sessions in:\n${folders.map((folder) => `  ${folder.path} (${folder.source})`).join('\n')}\n`,
  );
  return followers;
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new ParleyError('INVALID_INPUT', `--port must be a whole number from 0 to 65535, not "${value}".`, {
      fault: 'user',
    });
  }
  return port;
}

/** `--session-idle`: seconds, above 0. */
export function parseSessionIdle(value: string): number {
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds <= 0) {
    throw new ParleyError(
      'INVALID_INPUT',
      `--session-idle must be a number of seconds above 0, not "${value}". Leave it out for the default (600).`,
      { fault: 'user' },
    );
  }
  return seconds;
}

/** `--max-live-sessions`: a whole number above 0. */
export function parseMaxLiveSessions(value: string): number {
  const count = Number(value);
  if (!/^\s*\d+\s*$/.test(value) || count < 1) {
    throw new ParleyError(
      'INVALID_INPUT',
      `--max-live-sessions must be a whole number above 0, not "${value}". Leave it out for no bound.`,
      { fault: 'user' },
    );
  }
  return count;
}

/** dist/web beside the built CLI, when it was built. */
function defaultWebRoot(): string | undefined {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const candidate of [resolve(here, '..', '..', 'web'), resolve(here, '..', '..', '..', 'dist', 'web')]) {
    if (existsSync(join(candidate, 'index.html'))) return candidate;
  }
  return undefined;
}

/** Resolves after a graceful shutdown on SIGTERM or SIGINT; a second signal exits at once. */
function waitForSignal(server: RunningServer): Promise<void> {
  return new Promise((done) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        process.stderr.write(`parley: ${signal} again; exiting without waiting.\n`);
        process.exit(130);
      }
      stopping = true;
      process.stderr.write(`parley: ${signal}: ending running turns and saving state…\n`);
      server.close().then(
        () => {
          process.off('SIGTERM', stop);
          process.off('SIGINT', stop);
          done();
        },
        (error: unknown) => {
          process.stderr.write(`parley: shutdown failed: ${String(error)}\n`);
          process.exitCode = 1;
          done();
        },
      );
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
}
