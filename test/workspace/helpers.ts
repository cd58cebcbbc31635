import { promises as fs, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  ApprovalBroker,
  ProjectWorkspace,
  type PermissionMode,
  type WorkspaceTool,
} from '../../src/workspace/index.js';

/** A temp project folder (with an outside sibling), removed by `cleanup`. */
export async function tempWorkspace(): Promise<{
  base: string;
  root: string;
  outside: string;
  cleanup: () => Promise<void>;
}> {
  const base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'parley-workspace-')));
  const root = path.join(base, 'project');
  const outside = path.join(base, 'outside');
  await fs.mkdir(root);
  await fs.mkdir(outside);
  return { base, root, outside, cleanup: () => fs.rm(base, { recursive: true, force: true }) };
}

export interface ToolRig {
  tools: Map<string, WorkspaceTool>;
  broker: ApprovalBroker;
  workspace: ProjectWorkspace;
  call(name: string, input: unknown, signal?: AbortSignal): ReturnType<WorkspaceTool['execute']>;
}

export async function toolRig(
  root: string,
  options: {
    mode?: PermissionMode;
    broker?: ApprovalBroker;
    sandbox?: 'auto' | 'none';
    network?: boolean;
    onCommandSpawn?: (pid: number) => void;
  } = {},
): Promise<ToolRig> {
  const workspace = await ProjectWorkspace.open({ root, sandbox: options.sandbox ?? 'none' });
  const broker = options.broker ?? new ApprovalBroker();
  const list = workspace.tools({
    sessionId: 'session-1',
    permissions: ['files-read', 'files-write', 'shell'],
    mode: options.mode ?? 'bypassPermissions',
    broker,
    ...(options.network !== undefined ? { network: options.network } : {}),
    ...(options.onCommandSpawn ? { onCommandSpawn: options.onCommandSpawn } : {}),
  });
  const tools = new Map(list.map((tool) => [tool.name, tool]));
  return {
    tools,
    broker,
    workspace,
    call: (name, input, signal) => {
      const tool = tools.get(name);
      if (!tool) throw new Error(`no tool ${name}`);
      return tool.execute(input, signal ? { signal } : {});
    },
  };
}

/** Whether a process exists and is not a zombie (a killed child not yet reaped by its new parent). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Polls a condition on the event loop (no fixed sleeps): resolves once it holds, fails after `timeoutMs`. */
export async function eventually(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
