import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import { createServer as createSecureServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { join, resolve } from 'node:path';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { loadTokenizer, ParleyError } from '../conversation/index.js';
import type { HookRunner, Notifier } from '../hooks/index.js';
import { createDraftService, type DraftService, type DraftServiceOptions } from '../draft/index.js';
import { createScheduler, type HarnessClock, type RunService, type Scheduler } from '../harness/index.js';
import { ChannelIdSchema, PAIR_PATH, PROTOCOL_VERSION, RPC_PATH, type ServerFile } from '../protocol/index.js';
import {
  createBackendSummarizer,
  createSessionManager,
  type FileSnapshotSettings,
  type SessionManager,
  type Summarizer,
} from '../sessions/index.js';
import {
  loadOrCreateToken,
  isLoopback,
  isWildcard,
  networkNames,
  originAllowed,
  ownOrigins,
  presentedToken,
  tokenMatches,
  writePrivateFile,
} from './auth.js';
import { wireAttention, webUiSink } from './attention.js';
import { createDeviceHandlers } from './device-handlers.js';
import { DeviceRegistry, PairingCodes } from './devices.js';
import { Dispatcher, type Logger } from './dispatcher.js';
import { handlePairing } from './pairing-endpoint.js';
import { certificateFingerprint, type TlsCredentials } from './tls.js';
import { createHandlers } from './handlers.js';
import { Connection, Hub } from './hub.js';
import { RunFollowers } from './run-followers.js';
import { forwardRunEvents } from './run-handlers.js';
import { forwardScheduleEvents } from './schedule-handlers.js';
import { createServerScheduleTargets } from './schedule-targets.js';
import { TokenBucket } from './rate-limit.js';
import { serveStatic } from './static-files.js';
import { SessionUpdateThrottle } from './update-throttle.js';
import { prepareDataFolder, type DraftStore, type ScheduleStore, type SessionStore } from '../store/index.js';

export const SERVER_VERSION = '0.1.0';

/** Options of `startServer`: the project and data folders, where to listen, and the stores and services it serves. */
export interface ServerOptions {
  /** The project folder the server runs in. */
  projectRoot: string;
  /** Its data folder (sessions unless `store` is given, drafts, tasks, token, server.json). */
  dataDir: string;
  /**
   * Snapshot the project's files around each turn that may change them, so a rewind can restore
   * them (default folder: `<dataDir>/file-snapshots`). Off when absent; `parley serve` turns it on.
   */
  fileSnapshots?: FileSnapshotSettings;
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
  /**
   * Default 127.0.0.1. Anything but loopback is reachable from the network, and is refused unless
   * the server has `tls` or is told `insecureHttp`.
   */
  host?: string;
  /** Serve https and wss with this certificate and key (PEM): given, or `selfSignedCertificate()`. */
  tls?: TlsCredentials;
  /** Plain HTTP beyond loopback, for a network the user trusts: tokens then cross it readable. */
  insecureHttp?: boolean;
  /** Pairing: how long a code lasts (default 10 minutes) and how many attempts pass (default a burst of 5, then 5 a minute). */
  pairing?: { codeTtlMs?: number; attempts?: { capacity: number; perSecond: number } };
  /** The clock of pairing codes, their rate limit and devices' last seen, in epoch milliseconds (tests move it). */
  now?: () => number;
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
  /**
   * Schedules: where they are kept (the file store in the data folder, or PostgreSQL beside the
   * sessions, so several servers share them and each firing happens on one). The server runs a
   * scheduler over it once it listens; the caller opened the store and closes it after `close()`.
   * Without it the schedule methods answer SCHEDULES_NOT_ENABLED.
   */
  scheduleStore?: ScheduleStore;
  /** The scheduler's clock (tests move it); default the system clock. */
  schedulerClock?: HarnessClock;
  /** Write `server.json` (default true). */
  writeServerFile?: boolean;
  log?: Logger;
  /** People's hooks (the CLI loads them from the user's file and parley.config.json): every turn of every session runs them. */
  hooks?: HookRunner;
  /**
   * Where notifications of what waits for a person go (src/cli/notifications-wiring.ts makes it
   * from the config files). The server adds its web UI as a sink, sets the links' address once it
   * listens (unless one is configured), and closes it in `close()`.
   */
  notifier?: Notifier;
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
  /** Over TLS: the SHA-256 fingerprint of the certificate, for the user to compare on the phone. */
  readonly tlsFingerprint: string | undefined;
  readonly manager: SessionManager;
  readonly drafts: DraftService;
  /** The durable-run service, when runs are enabled. */
  readonly runService: RunService | undefined;
  /** The scheduler, when the server was given a schedule store. */
  readonly scheduler: Scheduler | undefined;
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
  if (!isLoopback(host) && !options.tls && options.insecureHttp !== true) {
    throw new ParleyError(
      'INSECURE_HTTP_REFUSED',
      `Listening on ${host} would send the token and every session in plain text across the network. Serve it over TLS (--tls-cert <file> --tls-key <file>, or leave them out for a self-signed certificate), or say --insecure-http for a network you trust.`,
      { fault: 'user', data: { host } },
    );
  }
  if (!isLoopback(host))
    log(
      'warn',
      `Listening on ${host}${options.tls ? '' : ' over plain HTTP'}: anyone who can reach this address and has a token can drive your agents. Keep tokens secret.`,
    );
  const now = options.now ?? Date.now;
  const tlsFingerprint = options.tls ? certificateFingerprint(options.tls.cert) : undefined;
  const scheme = options.tls ? 'https' : 'http';

  await prepareDataFolder(dataDir);
  const token = await loadOrCreateToken(dataDir);
  const devices = await DeviceRegistry.open(dataDir, now);
  const codes = new PairingCodes(options.pairing?.codeTtlMs ?? 10 * 60_000, now);
  const pairingRate = options.pairing?.attempts ?? { capacity: 5, perSecond: 5 / 60 };
  const pairingAttempts = new TokenBucket(pairingRate.capacity, pairingRate.perSecond, options.now);
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
    ...(options.fileSnapshots
      ? { fileSnapshots: { folder: join(dataDir, 'file-snapshots'), ...options.fileSnapshots } }
      : {}),
  });
  if (manager.fileSnapshots) {
    // A restore a crash cut short is finished before anything else touches the files.
    await manager.fileSnapshots.recover().catch(async (error: unknown) => {
      await manager.close();
      throw error;
    });
    // Old snapshots of abandoned branches go in the background; the conversation is never pruned.
    void manager.fileSnapshots.prune().catch(() => undefined);
  }
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

  const scheduler = options.scheduleStore
    ? createScheduler({
        store: options.scheduleStore,
        targets: createServerScheduleTargets({ runService, drafts, manager, projectRoot }),
        ...(options.schedulerClock ? { clock: options.schedulerClock } : {}),
        ...(options.leaseOwner ? { serverName: options.leaseOwner } : {}),
        onError: (error) =>
          log('warn', 'A pass of the scheduler failed; the next one tries again', { error: String(error) }),
      })
    : undefined;

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
  let pairingLinks: (code: string) => { links: string[]; reachable: boolean; tlsFingerprint?: string } = () => {
    throw new Error('The server is not listening yet.');
  };
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
      ...(scheduler ? { scheduler } : {}),
      ...(options.notifier ? { notifier: options.notifier } : {}),
      deviceHandlers: createDeviceHandlers({
        devices,
        codes,
        hub,
        connection: (id) => {
          const found = byId.get(id);
          if (!found) throw new ParleyError('MANAGER_CLOSED', 'This connection is closed.');
          return found;
        },
        pairingLinks: (code) => pairingLinks(code),
      }),
    }),
    log,
  );

  const unsubscribers = wireNotifications(manager, drafts, hub);
  const notifier = options.notifier;
  if (notifier) {
    notifier.addSecret(token);
    notifier.addSink(webUiSink(hub));
    unsubscribers.push(
      ...wireAttention({
        notifier,
        drafts,
        manager,
        hub,
        ...(runService ? { runService } : {}),
        ...(scheduler ? { scheduler } : {}),
      }),
    );
  }
  if (runService) unsubscribers.push(...forwardRunEvents(runService, runFollowers));
  if (scheduler) unsubscribers.push(...forwardScheduleEvents(scheduler, hub));
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
  const listener: RequestListener = (request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (url.pathname === RPC_PATH) {
      response.writeHead(426, { 'Content-Type': 'text/plain; charset=utf-8', Upgrade: 'websocket' });
      response.end('This endpoint speaks JSON-RPC over WebSocket.\n');
      return;
    }
    if (url.pathname === PAIR_PATH) {
      handlePairing(request, response, {
        codes,
        devices,
        attempts: pairingAttempts,
        origins: () => allowedOrigins,
        log,
      }).catch((error: unknown) => {
        log('error', 'A pairing request failed', { error: String(error) });
        if (!response.headersSent) response.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
        response.end('The pairing failed on the server; try again.\n');
      });
      return;
    }
    void serveStatic(options.webRoot, request, response, url.pathname);
  };
  const http: Server = options.tls
    ? createSecureServer({ cert: options.tls.cert, key: options.tls.key }, listener)
    : createServer(listener);

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
    const presented = presentedToken(request, url);
    const device = tokenMatches(presented, token) ? undefined : devices.match(presented);
    if (!device && !tokenMatches(presented, token)) {
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
    sockets.handleUpgrade(request, socket, head, (ws) => accept(ws, channelId, socket, device?.deviceId));
  });

  const accept = (ws: WebSocket, channelId: string, stream: Duplex, deviceId: string | undefined) => {
    const connection = new Connection(
      randomUUID(),
      channelId,
      ws,
      rateLimit === false ? undefined : new TokenBucket(rateLimit.capacity, rateLimit.perSecond),
      stream,
    );
    connection.deviceId = deviceId;
    const seen = () => {
      if (deviceId !== undefined)
        devices
          .seen(deviceId)
          .catch((error: unknown) => log('warn', 'Could not record when a device was seen', { error: String(error) }));
    };
    seen();
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
      // A revoked device's frames already on their way are not answered.
      if (connection.closed) return;
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
      const revoked = connection.deviceId !== undefined && !devices.list().some((each) => each.deviceId === deviceId);
      hub.remove(connection);
      byId.delete(connection.id);
      if (!revoked) seen();
    });
  };

  try {
    await new Promise<void>((done, fail) => {
      http.once('error', fail);
      http.listen(options.port ?? 0, host, () => {
        http.off('error', fail);
        done();
      });
    });
  } catch (error) {
    // A port in use or an address not this machine's: what was opened closes, so the process can exit.
    for (const off of unsubscribers) off();
    if (ownsRunService) await runService?.close().catch(() => undefined);
    await drafts.close().catch(() => undefined);
    await manager.close();
    throw error;
  }
  const port = (http.address() as AddressInfo).port;
  allowedOrigins = ownOrigins(host, port, scheme);
  const bracket = (name: string) => (name.includes(':') && !name.startsWith('[') ? `[${name}]` : name);
  // On every interface, this machine's own commands and browser reach it by loopback.
  const displayHost = bracket(isWildcard(host) ? '127.0.0.1' : host);
  const wsUrl = `${options.tls ? 'wss' : 'ws'}://${displayHost}:${port}${RPC_PATH}`;
  const url = `${scheme}://${displayHost}:${port}/?token=${token}`;
  pairingLinks = (code) => {
    const network = networkNames(host);
    const names = network.length > 0 ? network : [displayHost];
    return {
      links: names.map((name) => `${scheme}://${bracket(name)}:${port}/#pair=${code}`),
      reachable: network.length > 0,
      ...(tlsFingerprint ? { tlsFingerprint } : {}),
    };
  };
  notifier?.setWebUrl(`${scheme}://${displayHost}:${port}/`);
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
      ...(tlsFingerprint ? { tlsFingerprint } : {}),
    };
    await writePrivateFile(serverFile, `${JSON.stringify(content, null, 2)}\n`);
  }
  setImmediate(() => void loadTokenizer());
  // Firings start once the server listens, drafts recovered and runs resumed.
  scheduler?.start();

  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      closing = true;
      // No firing starts while the server winds down.
      await scheduler
        ?.close()
        .catch((error: unknown) => log('error', 'Closing the scheduler failed', { error: String(error) }));
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
      await notifier?.close();
      // The last notifications may still be held for this turn: they go out before the sockets close.
      hub.flush();
      for (const connection of hub.all()) connection.socket.close(1001, 'server shutting down');
      const stopped = new Promise<void>((done) => http.close(() => done()));
      http.closeAllConnections();
      for (const connection of [...hub.all()]) connection.socket.terminate();
      await stopped;
      // The devices' last seen, written as their sockets closed, lands before the folder is let go.
      await devices.settled();
      await manager.close();
      if (options.writeServerFile !== false) await rm(serverFile, { force: true });
    })());

  return {
    url,
    wsUrl,
    host,
    port,
    token,
    tlsFingerprint,
    manager,
    drafts,
    runService,
    scheduler,
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
    drafts.on('goal_status', (payload) => hub.toChannel(payload.channelId, 'goal_status', payload)),
    drafts.on('draft_closed', (payload) => hub.toChannel(payload.channelId, 'draft_closed', payload)),
    drafts.on('permission_requested', (payload) =>
      hub.toChannelAndApprovalFollowers(payload.channelId, 'permission_requested', payload),
    ),
    drafts.on('permission_resolved', (payload) =>
      hub.toChannelAndApprovalFollowers(payload.channelId, 'permission_resolved', payload),
    ),
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
