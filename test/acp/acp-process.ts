import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createRequire } from 'node:module';
import { Readable, Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import {
  client,
  ndJsonStream,
  PROTOCOL_VERSION,
  type ClientCapabilities,
  type ClientConnection,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
  type SessionUpdate,
} from '@agentclientprotocol/sdk';
import { parleyNodeArguments } from '../helpers/parley-cli.js';

export const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/** `parley acp` started the way an editor starts it: a child process speaking ACP on its stdio. */
export function spawnParleyAcp(options: {
  cwd: string;
  env?: Record<string, string>;
  args?: string[];
}): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, [...parleyNodeArguments(), ...(options.args ?? []), 'acp'], {
    cwd: options.cwd,
    env: { PATH: process.env['PATH'] ?? '', HOME: options.cwd, ...options.env },
  });
}

export interface EditorOptions {
  /** How the editor answers `session/request_permission` (default: the first option). */
  permission?: (request: RequestPermissionRequest) => RequestPermissionResponse | Promise<RequestPermissionResponse>;
  /** The editor's buffers, for `fs/read_text_file` and `fs/write_text_file`. */
  files?: Map<string, string>;
  /** Told of each `fs/*` request the agent makes, with its path. */
  onFileRequest?: (method: 'fs/read_text_file' | 'fs/write_text_file', path: string) => void;
  capabilities?: ClientCapabilities;
}

/**
 * An ACP client (the SDK's `client()` app) attached to a `parley acp` process: it records every
 * session update, answers permission requests and serves files from its own buffers.
 */
export class Editor {
  readonly updates: SessionNotification[] = [];
  readonly permissionRequests: RequestPermissionRequest[] = [];
  readonly stderr: string[] = [];
  readonly connection: ClientConnection;
  private readonly waiters: Array<() => void> = [];

  constructor(
    readonly child: ChildProcessWithoutNullStreams,
    options: EditorOptions = {},
  ) {
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => this.stderr.push(chunk));
    const app = client({ name: 'test-editor' })
      .onNotification('session/update', ({ params }) => {
        this.updates.push(params);
        for (const wake of this.waiters.splice(0)) wake();
      })
      .onRequest('session/request_permission', ({ params }) => {
        this.permissionRequests.push(params);
        return options.permission
          ? options.permission(params)
          : { outcome: { outcome: 'selected', optionId: params.options[0]!.optionId } };
      })
      .onRequest('fs/read_text_file', ({ params }) => {
        options.onFileRequest?.('fs/read_text_file', params.path);
        return { content: options.files?.get(params.path) ?? '' };
      })
      .onRequest('fs/write_text_file', ({ params }) => {
        options.onFileRequest?.('fs/write_text_file', params.path);
        options.files?.set(params.path, params.content);
        return {};
      });
    this.connection = app.connect(
      ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>),
    );
    this.capabilities = options.capabilities ?? {};
  }

  private readonly capabilities: ClientCapabilities;

  get agent(): ClientConnection['agent'] {
    return this.connection.agent;
  }

  initialize() {
    return this.agent.request('initialize', {
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: this.capabilities,
      clientInfo: { name: 'test-editor', version: '1.0.0' },
    });
  }

  /** The updates of one session, in order. */
  updatesOf(sessionId: string): SessionUpdate[] {
    return this.updates
      .filter((notification) => notification.sessionId === sessionId)
      .map((notification) => notification.update);
  }

  /** Resolves once an update matching `predicate` has arrived (at index `from` or later). */
  async waitFor(predicate: (notification: SessionNotification) => boolean, from = 0): Promise<SessionNotification> {
    for (;;) {
      const found = this.updates.slice(from).find(predicate);
      if (found) return found;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /** Closes stdin (as an editor does) and waits for the process to exit; returns its exit code. */
  async close(): Promise<number | null> {
    const exited = new Promise<number | null>((resolve) => {
      if (this.child.exitCode !== null) resolve(this.child.exitCode);
      else this.child.once('exit', (code) => resolve(code));
    });
    this.connection.close();
    this.child.stdin.end();
    return exited;
  }
}

/** The text of the agent's message chunks among `updates`. */
export function agentText(updates: readonly SessionUpdate[]): string {
  return updates
    .flatMap((update) =>
      update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text' ? [update.content.text] : [],
    )
    .join('');
}
