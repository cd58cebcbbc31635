import * as z from 'zod';
import { IdSchema } from '../record-format.js';

/**
 * The records of a DraftStore (see draft-store.ts): projects, tasks, drafts and role files. The
 * file implementation keeps them as today's JSON files (`project.json`, `projects.json`,
 * `task.json`, `draft.json`, `drafts/<id>.json`, `roles/<role>.md`); these schemas are those
 * files' formats, so the draft layer re-exports them under the same names.
 */

/** Version of `draft.json`, `task.json`, `project.json` and `projects.json`. */
export const DRAFT_FORMAT_VERSION = 1;
const FormatVersion = z.literal(DRAFT_FORMAT_VERSION);

/** ISO 8601 timestamps in files: seed 000's `Date` fields, as JSON keeps them. */
const IsoDate = z.iso.datetime({ offset: true });

// ---- projects -----------------------------------------------------------------------------------

/** `<dataDir>/project.json`: optional; without it the project is named after its folder. */
export const ProjectFileSchema = z.object({
  formatVersion: FormatVersion,
  name: IdSchema,
  description: z.string().optional(),
  createdAt: IsoDate,
});
export type ProjectFile = z.infer<typeof ProjectFileSchema>;

/** `<dataDir>/projects.json`: the other projects this server knows. */
export const ProjectRegistrySchema = z.object({
  formatVersion: FormatVersion,
  projects: z.array(
    z.object({
      name: IdSchema,
      path: z.string().min(1),
      dataDir: z.string().min(1).optional(),
      description: z.string().optional(),
      createdAt: IsoDate,
    }),
  ),
});
export type ProjectRegistry = z.infer<typeof ProjectRegistrySchema>;

/** A project as a DraftStore holds it. Its name is its key. */
export const ProjectRecordSchema = z.object({
  name: IdSchema,
  /** The project folder (where its agents work and its `parley.config.json` is). */
  path: z.string().min(1),
  /** Its Parley data folder (default `<path>/.parley`). */
  dataDir: z.string().min(1),
  description: z.string().optional(),
  /** Absent for a home project that was never written down (no `project.json`). */
  createdAt: IsoDate.optional(),
  /** True for the project the store was opened for (the one `parley serve` runs in). */
  home: z.boolean(),
});
/** A project as the draft store keeps it. */
export type ProjectRecord = z.infer<typeof ProjectRecordSchema>;

/** What `createProject` takes: `path` absent means the store's default place for it. */
export const NewProjectSchema = z.object({
  name: IdSchema,
  /** An absolute project folder; absent: `<home dataDir>/projects/<name>` in the file store. */
  path: z.string().min(1).optional(),
  description: z.string().optional(),
  createdAt: IsoDate,
});
/** What `createProject` takes; `path` absent means the store's default place for it. */
export type NewProject = z.infer<typeof NewProjectSchema>;

// ---- tasks --------------------------------------------------------------------------------------

export const TaskStateSchema = z.enum(['open', 'in_progress', 'done', 'cancelled']);
/** Where a draft task is: open, in progress, done or cancelled. */
export type TaskState = z.infer<typeof TaskStateSchema>;

/** `<dataDir>/tasks/<slug>/task.json`; a task is keyed by (project, slug). */
export const TaskFileSchema = z.object({
  formatVersion: FormatVersion,
  slug: IdSchema,
  title: z.string().min(1),
  description: z.string(),
  state: TaskStateSchema,
  createdAt: IsoDate,
  updatedAt: IsoDate,
});
/** `<dataDir>/tasks/<slug>/task.json`: a draft task, keyed by project and slug. */
export type TaskFile = z.infer<typeof TaskFileSchema>;

// ---- drafts -------------------------------------------------------------------------------------

/**
 * Seed 000's DraftSession, field for field (its `Date`s as ISO strings), persisted as
 * `<taskDir>/draft.json`, plus what Parley needs to resume it: project, back end, continuity and
 * the native session id.
 */
export const DraftSessionSchema = z.object({
  formatVersion: FormatVersion,
  // seed 000
  /** Parley's session id (a random UUID); also the native id on a native back end's first turn. */
  sessionId: IdSchema,
  role: IdSchema,
  taskSlug: IdSchema,
  taskDir: z.string(),
  channelId: z.string().min(1),
  startedAt: IsoDate,
  lastActivityAt: IsoDate,
  /** Completed user→agent exchanges. */
  turnCount: z.number().int().nonnegative(),
  status: z.enum(['active', 'closed']),
  /** Sum of per-turn costs from the session log, workers included. */
  cumulativeCostUsd: z.number().nonnegative(),
  /** Occupancy of the last request: input + cache read + cache write tokens. */
  lastInputTokens: z.number().nonnegative(),
  lastOutputTokens: z.number().nonnegative(),
  /** 0 until a back end reports it. */
  contextWindow: z.number().int().nonnegative(),
  maxOutputTokens: z.number().int().nonnegative(),
  // Parley
  project: IdSchema,
  /** Back end name. */
  backend: z.string().min(1),
  model: z.string().optional(),
  continuity: z.enum(['native', 'managed']),
  /** The back end's own session id once it reported one (native continuity). */
  nativeSessionId: z.string().optional(),
  /** A native turn has been started, so the next one resumes instead of creating. */
  nativeStarted: z.boolean().default(false),
  /** Some turn ran on a model with no known price: the cost is a lower bound. */
  costUnknown: z.boolean().default(false),
  closedAt: IsoDate.optional(),
  /** The workspace tools' permission mode set for this draft (`set_permission_mode`); absent: the role's. */
  permissionMode: z.enum(['default', 'acceptEdits', 'bypassPermissions', 'plan']).optional(),
  /**
   * Why the draft closed: `undraft`; `native_resume_failed` (auto-undraft: the back end could not
   * resume its session); `recovery_failed` (after a restart its session was gone or its channel taken).
   */
  closeReason: z.enum(['undraft', 'native_resume_failed', 'recovery_failed']).optional(),
});
/** A draft as the draft store keeps it: its role, task, channel, session and, once closed, why. */
export type DraftSession = z.infer<typeof DraftSessionSchema>;

/** A draft record the store could not read (a damaged `draft.json`), reported rather than thrown. */
export interface UnreadableDraft {
  /** Where it is: the file's path in the file store. */
  location: string;
  reason: string;
}

// ---- roles --------------------------------------------------------------------------------------

/** A role file's text, unparsed (parsing is the draft layer's, `src/draft/roles.ts`). */
export const RoleTextSchema = z.object({
  /** The file's name without `.md` (the role's default name). */
  name: z.string().min(1),
  /** Where it is, for messages: the file's path in the file store. */
  location: z.string().min(1),
  text: z.string(),
});
export type RoleText = z.infer<typeof RoleTextSchema>;

/** A role file that exists but could not be read: named in `list_roles`' errors, never thrown. */
export interface RoleTextError {
  location: string;
  message: string;
}
