import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  createScriptedBackend,
  type AgentBackend,
  type AgentTurn,
  type ExecuteRequest,
  type ScriptedBackend,
} from '../../src/backends/index.js';
import type { UnsequencedEvent } from '../../src/conversation/index.js';
import {
  createDraftService,
  type DraftService,
  type DraftServiceEvents,
  type DraftServiceOptions,
} from '../../src/draft/index.js';
import { createSessionManager, type SessionManager } from '../../src/sessions/index.js';
import { createFileStore, createMemoryStore, type SessionStore } from '../../src/store/index.js';
import type { HookRunner } from '../../src/hooks/index.js';

/** A temp project folder, removed by `cleanup`. */
export async function tempProject(): Promise<{ root: string; dataDir: string; cleanup: () => Promise<void> }> {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-draft-'));
  const dataDir = path.join(root, '.parley');
  return { root, dataDir, cleanup: () => fs.rm(root, { recursive: true, force: true }) };
}

export async function writeRole(dataDir: string, file: string, text: string): Promise<string> {
  const folder = path.join(dataDir, 'roles');
  await fs.mkdir(folder, { recursive: true });
  const target = path.join(folder, file);
  await fs.writeFile(target, text);
  return target;
}

/** Every notification the service emitted, in order. */
export class Recorder {
  readonly all: Array<{ name: keyof DraftServiceEvents; payload: unknown }> = [];
  constructor(service: DraftService) {
    for (const name of [
      'channel_message',
      'draft_status',
      'context_compacted',
      'agent_status',
      'draft_closed',
      'permission_requested',
      'permission_resolved',
      'goal_status',
    ] as const) {
      service.on(name, (payload) => this.all.push({ name, payload }));
    }
  }
  of<K extends keyof DraftServiceEvents>(name: K): Array<DraftServiceEvents[K]> {
    return this.all.filter((entry) => entry.name === name).map((entry) => entry.payload as DraftServiceEvents[K]);
  }
}

export interface Harness {
  root: string;
  dataDir: string;
  store: SessionStore;
  manager: SessionManager;
  service: DraftService;
  recorder: Recorder;
  /** Back ends by name; the default one is `default`. */
  backends: Map<string, AgentBackend>;
}

export interface HarnessOptions {
  backends?: Record<string, AgentBackend>;
  maxConcurrentWorkers?: number;
  /** `file` for a real file store in the project's data folder (recovery tests). */
  store?: 'memory' | 'file';
  /** Reuse a project folder (a "restart"). */
  project?: { root: string; dataDir: string };
  defaultAwaitTimeoutMs?: number;
  /** The workspace tools' approver (DraftServiceOptions.approver). */
  approver?: DraftServiceOptions['approver'];
  sandbox?: 'auto' | 'none';
  /** People's hooks, run by the session manager (and the draft's workers). */
  hooks?: HookRunner;
  /** The draft service's clock (milliseconds since the epoch), for budgets in time. */
  clock?: () => number;
}

const open: Array<() => Promise<void>> = [];

/** A project, a SessionManager and a DraftService over scripted back ends. */
export async function harness(options: HarnessOptions = {}): Promise<Harness> {
  let project = options.project;
  if (!project) {
    const created = await tempProject();
    open.push(created.cleanup);
    project = created;
  }
  const store = options.store === 'file' ? await createFileStore({ dataDir: project.dataDir }) : createMemoryStore();
  const manager = await createSessionManager({
    store,
    ...(options.hooks ? { hooks: options.hooks, projectRoot: project.root } : {}),
  });
  const backends = new Map<string, AgentBackend>(Object.entries(options.backends ?? {}));
  if (!backends.has('default')) backends.set('default', createScriptedBackend({ idPrefix: 'default' }));
  const service = await createDraftService({
    manager,
    projectRoot: project.root,
    dataDir: project.dataDir,
    backendFor: (name) => {
      const backend = backends.get(name ?? 'default');
      if (!backend) throw new Error(`unknown back end "${name}"`);
      return backend;
    },
    ...(options.maxConcurrentWorkers ? { maxConcurrentWorkers: options.maxConcurrentWorkers } : {}),
    ...(options.defaultAwaitTimeoutMs ? { defaultAwaitTimeoutMs: options.defaultAwaitTimeoutMs } : {}),
    ...(options.approver ? { approver: options.approver } : {}),
    ...(options.sandbox ? { sandbox: options.sandbox } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const recorder = new Recorder(service);
  open.push(async () => {
    await service.close();
    await manager.close();
    await store.close();
  });
  return { root: project.root, dataDir: project.dataDir, store, manager, service, recorder, backends };
}

/** Closes every harness opened since the last call (afterEach). */
export async function closeAll(): Promise<void> {
  for (const close of open.splice(0).reverse()) await close().catch(() => undefined);
}

/** A scripted back end that reports native continuity and a native session id, like the Claude SDK. */
export function nativeScripted(
  inner: ScriptedBackend,
  options: { nativeId?: (request: ExecuteRequest) => string } = {},
): AgentBackend & { inner: ScriptedBackend } {
  return {
    inner,
    describe: () => ({ ...inner.describe(), name: 'scripted-native', continuity: 'native' }),
    execute(request: ExecuteRequest): AgentTurn {
      const turn = inner.execute(request);
      const nativeId = options.nativeId?.(request) ?? request.nativeSessionId ?? request.sessionId;
      async function* events(): AsyncGenerator<UnsequencedEvent> {
        for await (const event of turn.events) {
          if (event.type === 'metadata_update' && event.metadata.turnComplete)
            yield { ...event, metadata: { ...event.metadata, nativeSessionId: nativeId } };
          else yield event;
        }
      }
      return { events: events() };
    },
  };
}

/** A promise and its resolver, for gating scripted turns. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/**
 * Resolves once `condition` holds, checking after each turn of the event loop. The deadline only
 * guards against a hang (it is generous: file writes with fsync may be slow on a busy machine);
 * nothing here depends on how long anything takes.
 */
export async function until(condition: () => boolean, what = 'condition'): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * The id of the conversation an agent opens with `role` (its `subagent` block's id), filled in when
 * that block starts: a scripted `say` reads it through a getter once the conversation exists.
 */
export function followConversation(manager: SessionManager, role: string): { conversationId: string } {
  const ref = { conversationId: '' };
  manager.on('session:event', ({ event }) => {
    if (
      event.type === 'block_start' &&
      event.block.type === 'subagent' &&
      event.block.name === `conversation with ${role}`
    )
      ref.conversationId = event.block.subagentId;
  });
  return ref;
}
