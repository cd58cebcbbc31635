import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { resolve } from 'node:path';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { loadTokenizer } from '../conversation/index.js';
import type { HookRunner } from '../hooks/index.js';
import { createDraftService, type DraftService, type DraftServiceOptions } from '../draft/index.js';
import type { RunService } from '../harness/index.js';
import { ChannelIdSchema, PROTOCOL_VERSION, RPC_PATH, type ServerFile } from '../protocol/index.js';
import {
  createBackendSummarizer,
  createSessionManager,
  type SessionManager,
  type Summarizer,
} from '../sessions/index.js';
import {
  loadOrCreateToken,
  isLoopback,
  originAllowed,
  ownOrigins,
  presentedToken,
  tokenMatches,
  writePrivateFile,
} from './auth.js';
import { Dispatcher, type Logger } from './dispatcher.js';
import { createHandlers } from './handlers.js';
import { Connection, Hub } from './hub.js';
import { RunFollowers } from './run-followers.js';
import { forwardRunEvents } from './run-handlers.js';
import { TokenBucket } from './rate-limit.js';
import { serveStatic } from './static-files.js';
import { SessionUpdateThrottle } from './update-throttle.js';
import { prepareDataFolder, type DraftStore, type SessionStore } from '../store/index.js';

export const SERVER_VERSION = '0.1.0';

/** Options of `startServer`: the project and data folders, where to listen, and the stores and services it serves. */
export interface ServerOptions {
  /** The project folder the server runs in. */
  projectRoot: string;
  /** Its data folder (sessions unless `store` is given, drafts, tasks, token, server.json). */
  dataDir: string;
  /**
   * Where sessions live; default: a file store in `dataDir`. The caller opened it and closes it
   * after `close()`. A store with `watch` (PostgreSQL) may be shared by several servers: each
   * announces to its clients the events the others append.
   */
  store?: SessionStore;
  /** The PostgreSQL URL `store` was opened with, for the stores that live beside it (durable runs). */
  storeUrl?: string;
  /**
   * Where projects, tasks, drafts and role files live, and the draft leases; default: the file
   * DraftStore in `dataDir`. With a shared database (PostgreSQL), several servers serve the same
   * drafts, each run by one server at a time under its lease. The caller opened it and closes it.
   */
  draftStore?: DraftStore;
  /** This server's name in draft leases (default: host, pid and a random suffix). */
  leaseOwner?: string;
  /** How long a draft lease lasts unless renewed (default 30 s): how soon another server may take over a dead one's drafts. */
  leaseTtlMs?: number;
  /** Default 0: any free port. */
  port?: number;
  /** Default 127.0.0.1. Anything but loopback is reachable from the network: a warning is logged. */
  host?: string;
  /** The web UI's files (e.g. dist/web), served at `/`. */
  webRoot?: string;
  /** Largest frame a client may send (default 1 MiB); larger closes the connection with 1009. */
  maxMessageBytes?: number;
  /** Requests per connection: a burst of `capacity`, refilled at `perSecond` (default 200 / 100 per s); `false`: unlimited. */
  rateLimit?: { capacity: number; perSecond: number } | false;
  /** Unsent bytes after which a slow client is disconnected (1013) to resume later (default 16 MiB). */
  maxBufferedBytes?: number;
  /** The back end for a role's `backend`/`model`; passed to the DraftService. */
  backendFor?: DraftServiceOptions['backendFor'];
  /** The back ends `list_backends` offers; default: every registered back end. */
  backendNames?: string[];
  maxConcurrentWorkers?: number;
  /** How long a session unused stays in memory (default 10 minutes): `SessionManagerOptions.liveSessionIdleMs`. */
  liveSessionIdleMs?: number;
  /** At most this many sessions in memory (default: no bound): `SessionManagerOptions.maxLiveSessions`. */
  maxLiveSessions?: number;
  /** What compaction asks for summaries; default: one turn on `backendFor()` when given; `false`: none (force_compact is UNSUPPORTED). */
  summarize?: Summarizer | false;
  /** Opens the draft layer; default `createDraftService` from src/draft. */
  createDraftService?: (options: DraftServiceOptions) => Promise<DraftService>;
  /**
   * Durable runs: the service the run methods (`list_runs` … `abort_run`) call and whose
   * events reach connections that `subscribe_runs`. The caller made it and closes it after `close()`.
   * Without it (and without `createRunService`) the run methods answer RUNS_NOT_ENABLED.
   */
  runService?: RunService;
  /**
   * Or a factory the server calls once its SessionManager is open (a run's agents keep their
   * sessions there); the server owns what it makes and closes it in `close()`. `parley serve`
   * passes one (src/cli/run-service-wiring.ts).
   */
  createRunService?: (context: RunServiceContext) => Promise<RunService>;
  /** Write `server.json` (default true). */
  writeServerFile?: boolean;
  log?: Logger;
  /** People's hooks (the CLI loads them from the user's file and parley.config.json): every turn of every session runs them. */
  hooks?: HookRunner;
}

/** What a run service factory gets from the server it serves in. */
export interface RunServiceContext {
  manager: SessionManager;
  projectRoot: string;
  dataDir: string;
  /** The session store the server was given (PostgreSQL); undefined: the file store in `dataDir`. */
  store?: SessionStore;
  /** The PostgreSQL URL of `store`, for stores beside it (the durable runs' RunStore). */
  storeUrl?: string;
  backendFor?: DraftServiceOptions['backendFor'];
  log: Logger;
}

/** A started server: its URLs, and `close()` to stop it gracefully. */
export interface RunningServer {
  /** The web UI's URL with the token. */
  readonly url: string;
  /** The JSON-RPC endpoint (add `token` and `channel`). */
  readonly wsUrl: string;
  readonly host: string;
  readonly port: number;
  readonly token: string;
  readonly manager: SessionManager;
  readonly drafts: DraftService;
  /** The durable-run service, when runs are enabled. */
  readonly runService: RunService | undefined;
  readonly recovered: { recovered: number; failed: Array<{ sessionId: string; reason: string }> };
  /** Connections open now. */
  readonly connections: number;
  /** Graceful shutdown: refuse new work, end running turns cleanly, save state, remove server.json. */
  close(): Promise<void>;
}

const defaultLogger: Logger = (level, message, fields) => {
  if (level === 'debug') return;
  process.stderr.write(`[parley ${level}] ${message}${fields ? ` ${JSON.stringify(fields)}` : ''}\n`);
};

/**
 * Starts `parley serve`: the SessionManager (file store in `dataDir`), the DraftService, JSON-RPC
 * over WebSocket on `RPC_PATH`, the web UI's files, and `server.json`. Resolves once it accepts
 * connections, after recovering active drafts.
 */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const log = options.log ?? defaultLogger;
  const host = options.host ?? '127.0.0.1';
  const projectRoot = resolve(options.projectRoot);
  const dataDir = resolve(options.dataDir);
  const maxMessageBytes = options.maxMessageBytes ?? 1024 * 1024;
  const rateLimit = options.rateLimit === undefined ? { capacity: 200, perSecond: 100 } : options.rateLimit;
  if (!isLoopback(host))
    log(
      'warn',
      `Listening on ${host}: anyone who can reach this address and has the token can drive your agents. Keep the token secret.`,
    );

  await prepareDataFolder(dataDir);
  const token = await loadOrCreateToken(dataDir);
  const summarize =
    options.summarize === false
      ? undefined
      : (options.summarize ?? (options.backendFor ? createBackendSummarizer(options.backendFor()) : undefined));
  // The tokenizer (≈25 ms of CPU: the cold start in bench/tokens.bench.ts) loads once the server
  // listens, not on the way to ready.
  const manager = await createSessionManager({
    ...(options.store ? { store: options.store } : { dataDir }),
    projectRoot,
    preloadTokenizer: false,
    ...(summarize ? { summarize } : {}),
    ...(options.liveSessionIdleMs !== undefined ? { liveSessionIdleMs: options.liveSessionIdleMs } : {}),
    ...(options.maxLiveSessions !== undefined ? { maxLiveSessions: options.maxLiveSessions } : {}),
    ...(options.hooks ? { hooks: options.hooks } : {}),
  });
  let drafts: DraftService;
  try {
    drafts = await (options.createDraftService ?? createDraftService)({
      manager,
      projectRoot,
      dataDir,
      ...(options.draftStore ? { draftStore: options.draftStore } : {}),
      ...(options.leaseOwner ? { leaseOwner: options.leaseOwner } : {}),
      ...(options.leaseTtlMs !== undefined ? { leaseTtlMs: options.leaseTtlMs } : {}),
      ...(options.backendFor ? { backendFor: options.backendFor } : {}),
      ...(options.backendNames ? { backendNames: options.backendNames } : {}),
      ...(options.maxConcurrentWorkers !== undefined ? { maxConcurrentWorkers: options.maxConcurrentWorkers } : {}),
    });
  } catch (error) {
    await manager.close();
    throw error;
  }

  let runService = options.runService;
  const ownsRunService = runService === undefined && options.createRunService !== undefined;
  if (ownsRunService) {
    try {
      runService = await options.createRunService!({
        manager,
        projectRoot,
        dataDir,
        ...(options.store ? { store: options.store } : {}),
        ...(options.storeUrl ? { storeUrl: options.storeUrl } : {}),
        ...(options.backendFor ? { backendFor: options.backendFor } : {}),
        log,
      });
    } catch (error) {
      await drafts.close().catch(() => undefined);
      await manager.close();
      throw error;
    }
  }

  let closing = false;
  const hub = new Hub({
    maxBufferedBytes: options.maxBufferedBytes ?? 16 * 1024 * 1024,
    onSlowConnection: (connection) => {
      log('warn', 'A client fell too far behind; disconnecting it so it reconnects and resumes.', {
        connectionId: connection.id,
        channelId: connection.channelId,
      });
      connection.socket.close(1013, 'too slow: reconnect and resume with get_events');
      setTimeout(() => connection.socket.terminate(), 5_000).unref();
    },
  });
  const byId = new Map<string, Connection>();
  const runFollowers = new RunFollowers(hub);
  const dispatcher = new Dispatcher(
    createHandlers({
      manager,
      drafts,
      hub,
      projectRoot,
      version: SERVER_VERSION,
      connectionOf: (id) => byId.get(id),
      runFollowers,
      ...(runService ? { runService } : {}),
    }),
    log,
  );

  const unsubscribers = wireNotifications(manager, drafts, hub);
  if (runService) unsubscribers.push(...forwardRunEvents(runService, runFollowers));
  // Other servers on the same store: their appends reach this server's followers as its own do.
  const stopFollowing = manager.followStoreChanges({
    followed: (sessionId) => hub.hasFollowers(sessionId),
    onError: (error, sessionId) =>
      log('warn', 'Could not bring a session up to date with changes from other servers', {
        sessionId,
        error: String(error),
      }),
  });
  unsubscribers.push(() => void stopFollowing());

  let recovered: RunningServer['recovered'];
  try {
    recovered = await drafts.recover();
    for (const failure of recovered.failed)
      log('warn', `Could not recover draft ${failure.sessionId}: ${failure.reason}`);
  } catch (error) {
    for (const off of unsubscribers) off();
    if (ownsRunService) await runService?.close().catch(() => undefined);
    await drafts.close().catch(() => undefined);
    await manager.close();
    throw error;
  }

  const sockets = new WebSocketServer({
    noServer: true,
    maxPayload: maxMessageBytes,
    perMessageDeflate: false,
    clientTracking: false,
  });
  let allowedOrigins = new Set<string>();
  const http: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (url.pathname === RPC_PATH) {
      response.writeHead(426, { 'Content-Type': 'text/plain; charset=utf-8', Upgrade: 'websocket' });
      response.end('This endpoint speaks JSON-RPC over WebSocket.\n');
      return;
    }
    void serveStatic(options.webRoot, request, response, url.pathname);
  });

  http.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const refuse = (status: number, text: string, message: string) => {
      socket.end(
        `HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(message)}\r\n\r\n${message}`,
      );
      socket.destroy();
    };
    socket.on('error', () => socket.destroy());
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (closing) return refuse(503, 'Service Unavailable', 'The server is shutting down.\n');
    if (url.pathname !== RPC_PATH) return refuse(404, 'Not Found', `The JSON-RPC endpoint is ${RPC_PATH}.\n`);
    if (!tokenMatches(presentedToken(request, url), token)) {
      return refuse(
        401,
        'Unauthorized',
        'A valid token is required: `Authorization: Bearer <token>` or `?token=<token>` (see server.json in the data folder).\n',
      );
    }
    if (!originAllowed(request.headers.origin, allowedOrigins))
      return refuse(403, 'Forbidden', 'This origin may not connect to Parley.\n');
    const requested = url.searchParams.get('channel');
    let channelId: string;
    if (requested === null) channelId = randomUUID();
    else {
      const checked = ChannelIdSchema.safeParse(requested);
      if (!checked.success)
        return refuse(400, 'Bad Request', 'The `channel` parameter must be 1-200 letters, digits, ".", "_" or "-".\n');
      channelId = checked.data;
    }
    sockets.handleUpgrade(request, socket, head, (ws) => accept(ws, channelId, socket));
  });

  const accept = (ws: WebSocket, channelId: string, stream: Duplex) => {
    const connection = new Connection(
      randomUUID(),
      channelId,
      ws,
      rateLimit === false ? undefined : new TokenBucket(rateLimit.capacity, rateLimit.perSecond),
      stream,
    );
    hub.add(connection);
    byId.set(connection.id, connection);
    const context = { connectionId: connection.id, channelId };
    const dispatchOptions = {
      ...(connection.bucket
        ? { admit: () => connection.bucket!.take(), retryAfterMs: () => connection.bucket!.retryAfterMs() }
        : {}),
      closing: () => closing,
    };
    ws.on('message', (data: RawData, isBinary: boolean) => {
      const frame = isBinary ? null : rawToString(data);
      if (frame === null) {
        hub.write(
          connection,
          JSON.stringify({
            jsonrpc: '2.0',
            id: null,
            error: {
              code: -32600,
              message: 'Invalid request: binary frames are not accepted; send JSON text.',
              data: { code: 'INVALID_REQUEST' },
            },
          }),
        );
        return;
      }
      dispatcher.handleFrame(frame, context, dispatchOptions).then(
        (answer) => {
          if (answer !== undefined) hub.write(connection, answer);
        },
        (error: unknown) => log('error', 'A frame could not be answered', { error: String(error) }),
      );
    });
    ws.on('error', (error) => log('debug', 'WebSocket error', { connectionId: connection.id, error: error.message }));
    ws.on('close', () => {
      hub.remove(connection);
      byId.delete(connection.id);
    });
  };

  await new Promise<void>((done, fail) => {
    http.once('error', fail);
    http.listen(options.port ?? 0, host, () => {
      http.off('error', fail);
      done();
    });
  });
  const port = (http.address() as AddressInfo).port;
  allowedOrigins = ownOrigins(host, port);
  const displayHost = host.includes(':') ? `[${host}]` : host;
  const wsUrl = `ws://${displayHost}:${port}${RPC_PATH}`;
  const url = `http://${displayHost}:${port}/?token=${token}`;
  const serverFile = resolve(dataDir, 'server.json');
  if (options.writeServerFile !== false) {
    const content: ServerFile = {
      url,
      wsUrl,
      host,
      port,
      token,
      pid: process.pid,
      protocolVersion: PROTOCOL_VERSION,
      projectRoot,
      startedAt: new Date().toISOString(),
    };
    await writePrivateFile(serverFile, `${JSON.stringify(content, null, 2)}\n`);
  }
  setImmediate(() => void loadTokenizer());

  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      closing = true;
      // Running turns end first (aborted, a system block, state saved), so their last events still reach clients.
      await drafts
        .close()
        .catch((error: unknown) => log('error', 'Closing the draft layer failed', { error: String(error) }));
      // Live runs stop with their stored status unchanged: the next server resumes them from their journals.
      if (ownsRunService)
        await runService
          ?.close()
          .catch((error: unknown) => log('error', 'Closing the run service failed', { error: String(error) }));
      for (const off of unsubscribers) off();
      // The last notifications may still be held for this turn: they go out before the sockets close.
      hub.flush();
      for (const connection of hub.all()) connection.socket.close(1001, 'server shutting down');
      const stopped = new Promise<void>((done) => http.close(() => done()));
      http.closeAllConnections();
      for (const connection of [...hub.all()]) connection.socket.terminate();
      await stopped;
      await manager.close();
      if (options.writeServerFile !== false) await rm(serverFile, { force: true });
    })());

  return {
    url,
    wsUrl,
    host,
    port,
    token,
    manager,
    drafts,
    runService,
    recovered,
    get connections() {
      return hub.size;
    },
    close,
  };
}

/** Channel notifications from the draft layer; session events to followers. */
function wireNotifications(manager: SessionManager, drafts: DraftService, hub: Hub): Array<() => void> {
  const updates = new SessionUpdateThrottle((payload) => {
    if (hub.hasFollowers(payload.sessionId)) hub.toFollowers(payload.sessionId, 'session_updated', payload);
  });
  return [
    () => updates.close(),
    drafts.on('channel_message', (payload) => hub.toChannel(payload.channelId, 'channel_message', payload)),
    drafts.on('draft_status', (payload) => hub.toChannel(payload.channelId, 'draft_status', payload)),
    drafts.on('context_compacted', (payload) => hub.toChannel(payload.channelId, 'context_compacted', payload)),
    drafts.on('agent_status', (payload) => hub.toChannel(payload.channelId, 'agent_status', payload)),
    drafts.on('draft_closed', (payload) => hub.toChannel(payload.channelId, 'draft_closed', payload)),
    drafts.on('permission_requested', (payload) => hub.toChannel(payload.channelId, 'permission_requested', payload)),
    drafts.on('permission_resolved', (payload) => hub.toChannel(payload.channelId, 'permission_resolved', payload)),
    manager.on('session:event', (payload) => {
      if (hub.hasFollowers(payload.sessionId)) hub.toFollowers(payload.sessionId, 'session_event', payload);
    }),
    manager.on('session:updated', (payload) => {
      if (hub.hasFollowers(payload.sessionId)) updates.offer(payload);
    }),
    manager.on('session:history-changed', (payload) => {
      // The channel's clients and the session's followers both hold its history; each reads it again.
      const channelId = drafts.channelOfSession(payload.sessionId);
      if (channelId !== undefined) hub.toChannel(channelId, 'history_changed', payload);
      if (hub.hasFollowers(payload.sessionId)) hub.toFollowers(payload.sessionId, 'history_changed', payload);
    }),
    manager.on('session:compaction-start', (payload) => {
      if (hub.hasFollowers(payload.sessionId)) hub.toFollowers(payload.sessionId, 'compaction_started', payload);
    }),
    manager.on('session:compaction-complete', (payload) => {
      if (hub.hasFollowers(payload.sessionId)) hub.toFollowers(payload.sessionId, 'compaction_completed', payload);
    }),
    manager.on('session:compaction-error', (payload) => {
      if (hub.hasFollowers(payload.sessionId)) hub.toFollowers(payload.sessionId, 'compaction_failed', payload);
    }),
  ];
}

function rawToString(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
