import { isAbsolute } from 'node:path';
import { Readable, Writable } from 'node:stream';
import {
  agent,
  methods,
  ndJsonStream,
  PROTOCOL_VERSION,
  RequestError,
  type AgentConnection,
  type InitializeResponse,
  type McpServer,
  type Stream,
} from '@agentclientprotocol/sdk';
import type { SessionCapabilities } from '@agentclientprotocol/sdk/unstable';
import * as z from 'zod';
import { describeIssues, isParleyError } from '../conversation/index.js';
import { AcpSessions } from './acp-sessions.js';
import { Workspaces, type AcpBackends } from './workspaces.js';

/**
 * Parley as an Agent Client Protocol agent (ACP v1, through the SDK's `agent()` app): the editor
 * starts `parley acp` and speaks JSON-RPC over its stdio. This module wires the protocol's methods
 * to `AcpSessions`; the SDK validates params before a handler runs and answers malformed input.
 * Handlers turn Parley's errors into ACP errors here, in one place.
 */
export interface AcpAgentOptions {
  /** One data folder for every session; default: `.parley` in each session's `cwd`. */
  dataDir?: string;
  /** The back ends of a project, as the composition root resolves them (config, environment). */
  openBackends(projectRoot: string, dataDir: string): Promise<AcpBackends>;
  /** Where logs go: never stdout, which carries the protocol. */
  log(message: string): void;
  version: string;
  defaultAwaitTimeoutMs?: number;
}

export interface RunningAcpAgent {
  connection: AgentConnection;
  /** Resolves once the editor closed the connection and every turn and data folder is closed. */
  closed: Promise<void>;
}

/** Serves ACP on a stream (stdio for editors; tests and benches may pass their own). */
export function serveAcp(stream: Stream, options: AcpAgentOptions): RunningAcpAgent {
  const workspaces = new Workspaces({
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    openBackends: options.openBackends,
    log: options.log,
  });
  let connection: AgentConnection | undefined;
  const sessions = new AcpSessions({
    workspaces,
    client: () => connection!.client,
    log: options.log,
    version: options.version,
    ...(options.defaultAwaitTimeoutMs !== undefined ? { defaultAwaitTimeoutMs: options.defaultAwaitTimeoutMs } : {}),
  });
  const app = agent({ name: 'parley' })
    .onRequest(methods.agent.initialize, ({ params }): InitializeResponse => {
      sessions.clientCapabilities = params.clientCapabilities;
      return {
        protocolVersion: PROTOCOL_VERSION,
        agentInfo: { name: 'parley', title: 'Parley', version: options.version },
        agentCapabilities: {
          loadSession: true,
          // Prompts are text; embedded text resources (a file the editor attaches) are inlined.
          promptCapabilities: { image: false, audio: false, embeddedContext: true },
          mcpCapabilities: { http: true, sse: true },
          sessionCapabilities: SESSION_CAPABILITIES,
        },
        // Keys are the back ends' own environment variables; nothing to log in to here.
        authMethods: [],
      };
    })
    .onRequest(methods.agent.authenticate, () => ({}))
    .onRequest(methods.agent.session.new, ({ params }) => guard(() => sessions.newSession(params)))
    .onRequest(methods.agent.session.load, ({ params }) => guard(() => sessions.loadSession(params)))
    .onRequest(methods.agent.session.list, ({ params }) => guard(() => sessions.listSessions(params)))
    .onRequest(FORK_METHOD, parseForkParams, ({ params }) => guard(() => sessions.forkSession(params)))
    .onRequest(methods.agent.session.setMode, async ({ params }) => {
      await guard(() => sessions.setMode(params));
      return {};
    })
    .onRequest(methods.agent.session.setConfigOption, ({ params }) =>
      guard(() =>
        sessions.setConfigOption({ sessionId: params.sessionId, configId: params.configId, value: params.value }),
      ),
    )
    .onRequest(methods.agent.session.prompt, ({ params, signal }) => guard(() => sessions.prompt(params, signal)))
    .onNotification(methods.agent.session.cancel, ({ params }) => sessions.cancel(params.sessionId));

  connection = app.connect(stream);
  const closed = connection.closed
    .catch(() => undefined)
    .then(async () => {
      await sessions.close();
      await workspaces.close();
    });
  return { connection, closed };

  /** Parley's typed errors as ACP errors: user faults are invalid params, the rest internal errors (and logged). */
  async function guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (error instanceof RequestError) throw error;
      if (isParleyError(error)) {
        if (error.code === 'SESSION_NOT_FOUND')
          throw RequestError.resourceNotFound(
            String((error.data as { sessionId?: unknown } | undefined)?.sessionId ?? ''),
          );
        if (error.fault === 'user')
          throw RequestError.invalidParams(
            { code: error.code, ...(isRecord(error.data) ? error.data : {}) },
            error.message,
          );
      }
      options.log(`internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      throw RequestError.internalError(
        isParleyError(error) ? { code: error.code } : undefined,
        error instanceof Error ? error.message : String(error),
      );
    }
  }
}

/**
 * `session/fork` is in the SDK's unstable schema only: the stable app takes it as a method of our
 * own, with its params checked here, and the capability is typed by the unstable schema.
 */
const FORK_METHOD = 'session/fork';
const SESSION_CAPABILITIES: SessionCapabilities = { list: {}, fork: {} };

const NameValueSchema = z.object({ name: z.string(), value: z.string() });
const ForkParamsSchema = z.object({
  sessionId: z.string().min(1),
  cwd: z.string().refine(isAbsolute, 'must be an absolute path'),
  mcpServers: z
    .array(
      z.union([
        z.object({
          type: z.enum(['http', 'sse']),
          name: z.string(),
          url: z.string(),
          headers: z.array(NameValueSchema),
        }),
        z.object({
          type: z.literal('stdio').optional(),
          name: z.string(),
          command: z.string(),
          args: z.array(z.string()),
          env: z.array(NameValueSchema),
        }),
      ]),
    )
    .optional(),
});

function parseForkParams(params: unknown): { sessionId: string; cwd: string; mcpServers?: McpServer[] } {
  const parsed = ForkParamsSchema.safeParse(params);
  if (!parsed.success) throw RequestError.invalidParams({ issues: describeIssues(parsed.error.issues) });
  const { mcpServers, ...rest } = parsed.data;
  return { ...rest, ...(mcpServers ? { mcpServers } : {}) };
}

/** Serves ACP on this process's stdin and stdout. */
export function serveAcpOnStdio(options: AcpAgentOptions): RunningAcpAgent {
  const stream = ndJsonStream(
    Writable.toWeb(process.stdout),
    Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
  );
  return serveAcp(stream, options);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
