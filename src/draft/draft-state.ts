import type { AgentBackend } from '../backends/index.js';
import { MAIN_CONVERSATION, type ConversationBlock, type StreamEvent } from '../conversation/index.js';
import type { SessionManager, TypedEmitter } from '../sessions/index.js';
import type { ApprovalBroker, ProjectWorkspace } from '../workspace/index.js';
import type { DraftServiceEvents } from './contract.js';
import { DraftError } from './errors.js';
import type { AgentPool } from './pool.js';
import type { ProjectCatalog, ProjectLocation } from './projects.js';
import type { DraftSession, RoleInfo } from './types.js';
import type { Workers } from './workers.js';

export interface RunningTurn {
  controller: AbortController;
  done: Promise<void>;
  /**
   * Set once the turn's end (its completing metadata) has streamed: clients show the turn as over,
   * while the draft still saves its state. A prompt sent in that moment waits for it instead of
   * being refused with TURN_IN_PROGRESS.
   */
  settling?: boolean;
}

/** A draft in memory: its persisted DraftSession plus what a turn needs. */
export interface ActiveDraft {
  session: DraftSession;
  project: ProjectLocation;
  role: RoleInfo;
  backend: AgentBackend;
  turn?: RunningTurn;
  /** draft.json writes, one at a time, in order. */
  writes: Promise<unknown>;
  /** closeDraft has begun (or another server took the draft over): no more status pushes or turns. */
  closing?: boolean;
  /** The renewal of this server's lease on the draft (draft-lease.ts), while it holds one. */
  lease?: { timer: NodeJS.Timeout };
}

/**
 * What the parts of the draft service share: its collaborators and the registries of what runs in
 * memory. The service makes one and hands it to the functions of each part (catalog, lifecycle,
 * turns, tools, dispatch, recovery), so no part holds state of its own that another could miss.
 */
export interface DraftServiceState {
  readonly manager: SessionManager;
  readonly clock: () => number;
  readonly catalog: ProjectCatalog;
  readonly backendFor: (name?: string, model?: string) => AgentBackend;
  readonly emitter: TypedEmitter<DraftServiceEvents>;
  readonly pool: AgentPool;
  readonly workers: Workers;
  /** Active drafts by channel. */
  readonly drafts: Map<string, ActiveDraft>;
  /** Active drafts by session id. */
  readonly bySession: Map<string, ActiveDraft>;
  /** Channels with a `draft` call in flight: a second one is refused, not raced. */
  readonly claims: Set<string>;
  /** Tasks with a `draft` call in flight (data folder + slug). */
  readonly taskClaims: Set<string>;
  /** Sessions of autonomous dispatches, by session id → channel. */
  readonly dispatches: Map<string, string>;
  /** Channels with a `submit_prompt { draft }` in flight: the next one waits for it (draft-first-prompt.ts). */
  readonly firstPrompts: Map<string, Promise<unknown>>;
  /** Channels whose draft is being taken over from the store (draft-recovery.ts, takeOver). */
  readonly takeovers: Map<string, Promise<ActiveDraft | undefined>>;
  readonly defaultAwaitTimeoutMs: number;
  /** Where the workspace tools of every draft and worker ask for approval. */
  readonly broker: ApprovalBroker;
  /** Opened workspaces by project folder (draft-permissions.ts). */
  readonly workspaces: Map<string, Promise<ProjectWorkspace>>;
  /** `auto`: bwrap when it works here; `none`: commands unconfined. */
  readonly sandbox: 'auto' | 'none';
  /** Conversations between agents: which are answering now, and the user's unread notes. */
  readonly conversations: ConversationsState;
  /** This server's name in draft leases. */
  readonly leaseOwner: string;
  /** How long a lease lasts unless renewed. */
  readonly leaseTtlMs: number;
  closed: boolean;
}

/** Conversations between agents (conversations.ts): which have a `say` running, and the user's unread notes. */
export interface ConversationsState {
  busy: Set<string>;
  notes: Map<string, { forOther: string[]; forOpener: string[] }>;
}

export function createConversationsState(): ConversationsState {
  return { busy: new Set(), notes: new Map() };
}

export function iso(state: DraftServiceState, at = state.clock()): string {
  return new Date(at).toISOString();
}

export function assertOpen(state: DraftServiceState): void {
  if (state.closed)
    throw new DraftError('SERVICE_CLOSED', 'The draft service is closed; start the server again.', { fault: 'user' });
}

export function findLast(
  blocks: readonly ConversationBlock[],
  predicate: (block: ConversationBlock) => boolean,
): ConversationBlock | undefined {
  for (let index = blocks.length - 1; index >= 0; index--) if (predicate(blocks[index]!)) return blocks[index];
  return undefined;
}

/** The log's last user message has no completing `metadata_update` after it: its turn runs, or was cut. */
export async function turnOpenInLog(
  state: DraftServiceState,
  sessionId: string,
  blocks: readonly ConversationBlock[],
): Promise<boolean> {
  const lastUser = findLast(blocks, (block) => block.type === 'user_message');
  if (lastUser?.seq === undefined) return false;
  return turnOpen(blocks, await state.manager.getEvents(sessionId, { afterSeq: lastUser.seq }));
}

/** `turnOpenInLog` over events already read (the whole log, or the part after the last user message). */
export function turnOpen(blocks: readonly ConversationBlock[], events: readonly StreamEvent[]): boolean {
  const lastUser = findLast(blocks, (block) => block.type === 'user_message');
  if (lastUser?.seq === undefined) return false;
  const after = lastUser.seq;
  return !events.some(
    (event) =>
      event.seq > after &&
      event.type === 'metadata_update' &&
      event.conversationId === MAIN_CONVERSATION &&
      event.metadata.turnComplete === true,
  );
}
