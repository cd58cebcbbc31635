import { readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { ParleyError } from '../conversation/index.js';
import type { ProtocolClient, ServerFile, WebSocketLike } from '../protocol/index.js';

/**
 * Finding the project's running server, as the TUI does: `server.json` in the data folder names it,
 * its process must be alive, and its JSON-RPC path must answer. Shared by the TUI and the commands
 * that talk to a server (`parley run --detach`, `runs`, `answer`).
 */

export async function readServerFile(dataDir: string): Promise<ServerFile | undefined> {
  let text: string;
  try {
    text = await readFile(join(dataDir, 'server.json'), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const { ServerFileSchema } = await import('../protocol/index.js');
    const parsed = ServerFileSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The server's JSON-RPC path answers plain HTTP with 426 (Upgrade Required): it is a Parley server, and up. */
export async function answers(file: ServerFile): Promise<boolean> {
  try {
    const host = file.host.includes(':') ? `[${file.host}]` : file.host;
    const response = await fetch(`http://${host}:${file.port}/rpc`, { signal: AbortSignal.timeout(1_500) });
    await response.body?.cancel();
    return response.status === 426;
  } catch {
    return false;
  }
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface ProjectServerConnection {
  client: ProtocolClient;
  server: ServerFile;
  close(): void;
}

/**
 * Connects to the project's running server (no reconnecting: a command makes its few calls and
 * exits). Fails with NO_SERVER, saying how to start one, when none runs for this data folder.
 */
export async function connectToProjectServer(dataDir: string): Promise<ProjectServerConnection> {
  const file = await readServerFile(dataDir);
  if (!file || !processAlive(file.pid) || !(await answers(file))) {
    throw new ParleyError(
      'NO_SERVER',
      `No Parley server is running for this project (${file ? 'the one' : 'nothing'} ${join(dataDir, 'server.json')} names ${file ? 'does not answer' : 'is there'}). Start one with \`parley serve\` (or \`parley\`) in the project folder, then try again.`,
      { fault: 'user' },
    );
  }
  const [protocol, { WebSocket }] = await Promise.all([import('../protocol/index.js'), import('ws')]);
  const client = new protocol.ProtocolClient({
    transport: protocol.webSocketTransport({
      url: file.wsUrl,
      token: file.token,
      openTimeoutMs: 5_000,
      createSocket: (url) => new WebSocket(url, { maxPayload: 64 * 1024 * 1024 }) as unknown as WebSocketLike,
    }),
    reconnect: false,
    onError: () => undefined,
  });
  await client.connect();
  return { client, server: file, close: () => client.close() };
}

/** A workflow as the server's `start_run` takes it: a file under the project relative to its root, else the name as given. */
export function workflowReference(workflow: string, absolutePath: string | undefined, projectRoot: string): string {
  if (absolutePath === undefined) return workflow;
  const inside = relative(projectRoot, absolutePath);
  return inside.startsWith('..') ? absolutePath : inside;
}
