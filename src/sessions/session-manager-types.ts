import * as z from 'zod';
import type { StreamEvent } from '../conversation/index.js';
import {
  SessionScopeSchema,
  SessionSettingsSchema,
  type CheckpointSummarizer,
  type SessionRecord,
  type SessionStore,
  type StoreWarning,
} from '../store/index.js';
import type { HookRunner } from '../hooks/index.js';
import type { AgentDescriptionOverride } from './agent-descriptions.js';
import type { FileRestorer } from './session-history.js';
import type { CompactionSettings } from './compaction-controller.js';
import type { ContextOptions } from './context-builder.js';
import type { AgentTypeSettings } from './session-requests.js';
import type { Summarizer } from './summarizer.js';
import type { SnapshotHistory } from './file-snapshots/index.js';

/** What changed in a `session:updated` event. */
export type SessionUpdateAction =
  'created' | 'message_added' | 'events_appended' | 'cleared' | 'archived' | 'settings_changed';

/** The events a SessionManager emits (the broadcast events, plus the live stream). */
export interface SessionManagerEvents {
  'session:updated': { sessionId: string; action: SessionUpdateAction; session: SessionRecord };
  /** Every event appended to a session's log, after it is durable, in `seq` order. */
  'session:event': { sessionId: string; event: StreamEvent };
  'session:compaction-start': { sessionId: string; trigger: 'auto' | 'manual'; tokensBefore: number };
  'session:compaction-complete': {
    sessionId: string;
    trigger: 'auto' | 'manual';
    version: number;
    tokensBefore: number;
    tokensAfter: number;
    /** Which summarizer wrote the checkpoint (the model's, or the structural builder's). */
    summarizer: CheckpointSummarizer;
  };
  /**
   * Nothing changed; `message` says why. After `maxConsecutiveFailures` model failures in a row, automatic
   * compaction builds checkpoints structurally; after as many structural failures, it stops for the session.
   */
  'session:compaction-error': {
    sessionId: string;
    trigger: 'auto' | 'manual';
    message: string;
    code: string;
    consecutiveFailures: number;
    autoCompactionStopped: boolean;
  };
  /**
   * The session's active branch changed (a rewind, a branch switch, an edit): what a reader holds
   * of it is stale past `seq`, and it reads the active branch again from the start.
   */
  'session:history-changed': {
    sessionId: string;
    reason: HistoryChangeReason;
    /** The seq the active branch now ends at. */
    seq: number;
    session: SessionRecord;
  };
  'store:warning': StoreWarning;
}

/** Why a session's active branch changed. */
export type HistoryChangeReason = 'rewound' | 'branch_switched' | 'edited';

/** Options of `createSessionManager`: the store (or a data folder), token budget, summarizer and per-agent settings. */
export interface SessionManagerOptions {
  /** A file store in this folder (the default store). Ignored when `store` is given. */
  dataDir?: string;
  store?: SessionStore;
  /** The model that writes checkpoints (createBackendSummarizer builds one); without it, checkpoints are built structurally, with no model. */
  summarize?: Summarizer;
  /** Largest request in tokens (default 100,000). */
  tokenBudget?: number;
  /** Fraction of the budget at which compaction starts (default 0.9). */
  compactionThreshold?: number;
  /** The project folder whose files, notes and git history form the context. */
  projectRoot?: string;
  /** Milliseconds since the epoch; injectable for deterministic tests. */
  clock?: () => number;
  /** Counts tokens of a text; the tokenizer module provides the default. */
  countTokens?: (text: string) => number;
  /**
   * Start loading the tokenizer now, in the background (default true). A server that wants to be
   * ready first passes false and calls `loadTokenizer()` once it listens; the first count waits for it either way.
   */
  preloadTokenizer?: boolean;
  /** Tokens of the most recent messages a compaction keeps verbatim (default 20 % of the budget); per session in settings. */
  tailTokens?: number;
  /** Budget, threshold and tail per agent type; a session's own settings win. */
  agentTypes?: Record<string, AgentTypeSettings>;
  /** Role-file overrides of the built-in agent descriptions, per agent type. */
  agentDescriptions?: Record<string, AgentDescriptionOverride>;
  /** Compact automatically at the threshold (default true). `forceCompact` works either way. */
  autoCompact?: boolean;
  /** Start an automatic compaction when a turn ends past the threshold, not only before the next request (default true). */
  compactInBackground?: boolean;
  /** Bounds of the context (file tree depth and size, commits, note lengths). */
  context?: ContextOptions;
  /** Compaction guards: failures before automatic compaction stops, least reduction, timeout. */
  compaction?: CompactionSettings;
  /**
   * Milliseconds a session stays in memory unused before it is let go, to be loaded from its log
   * again when next needed (default 10 minutes). A session with a write pending is always kept.
   */
  liveSessionIdleMs?: number;
  /** At most this many sessions kept in memory: past it, the least recently used idle ones go first (default: no bound). */
  maxLiveSessions?: number;
  /**
   * People's hooks (`loadHooksConfig` reads them): run on every turn of every session this manager
   * runs, whichever back end (SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop,
   * PreCompact, PostCompact). None when absent.
   */
  hooks?: HookRunner;
  /**
   * Puts project files back for a rewind with `restore: 'files' | 'both'` (the snapshot store).
   * Without it such a rewind is refused with FILE_SNAPSHOTS_NOT_CONFIGURED; a conversation rewind works.
   */
  fileRestorer?: FileRestorer;
  /**
   * Snapshot the project's working tree (`projectRoot`) before and after each turn that may change
   * files (a native back end, or a turn given tools), into a shadow git repository, so a rewind can
   * put the files back (`manager.fileSnapshots.restore`). Off when absent.
   */
  fileSnapshots?: FileSnapshotSettings;
}

/** Where file snapshots live and how long those of abandoned branches are kept. */
export interface FileSnapshotSettings {
  /** The shadow repository and the snapshot list (default: `<dataDir>/file-snapshots`; needed when a `store` is given instead). */
  folder?: string;
  /** Snapshots on no active branch are pruned once older than this many milliseconds (default 14 days). */
  maxAbandonedAgeMs?: number;
  /** Which seqs lead to a point and which are on an active branch (default: a history without branches). */
  history?: SnapshotHistory;
  /** Project folders never snapshotted besides what .gitignore says (the data folder is always left out). */
  exclude?: readonly string[];
}

/** The zod schema of `CreateSessionOptions`. */
export const CreateSessionOptionsSchema = z.object({
  scope: SessionScopeSchema,
  agentType: z.string().min(1),
  /** Back end name. */
  backend: z.string().min(1).optional(),
  /** Default: a random UUID (draft sessions). */
  sessionId: z.string().optional(),
  title: z.string().optional(),
  agentProfileReference: z.string().optional(),
  settings: SessionSettingsSchema.optional(),
  readOnly: z.boolean().optional(),
  native: z
    .object({ backend: z.string(), nativeSessionId: z.string(), transcriptPath: z.string().optional() })
    .optional(),
});
/** What `createSession` needs: agent type, scope, back end and settings. */
export type CreateSessionOptions = z.input<typeof CreateSessionOptionsSchema>;

/** The token budget of a managed request when none is set. */
export const DEFAULT_TOKEN_BUDGET = 100_000;
/** The share of the token budget at which a session compacts on its own. */
export const DEFAULT_COMPACTION_THRESHOLD = 0.9;
