import type { DraftLeaseHolder, DraftLeaseResult } from './lease.js';
import type {
  DraftSession,
  NewProject,
  ProjectRecord,
  RoleText,
  RoleTextError,
  TaskFile,
  UnreadableDraft,
} from './records.js';

/**
 * Where the draft layer keeps its state: projects, their tasks, each task's drafts and role files.
 * Implementations: the file store (today's layout in the data folder, the default), the memory
 * store (tests); a database store implements the same contract, so a server on it keeps nothing of
 * its own on disk. Every implementation passes `test/store/drafts/conformance.ts`.
 *
 * Every implementer must:
 * - validate project names, task slugs and role names with `IdSchema` and refuse anything else
 *   with `INVALID_ID` before touching anything (no path may leave the data folder);
 * - validate every record it is asked to write with its schema (a ValidationError otherwise) and
 *   never hand out or keep a caller's objects;
 * - make `claimDraft` atomic: at most one active draft per channel (across every project of the
 *   store) and per task, whatever the number of callers or processes racing (a database: a unique
 *   index on the channel and one on (project, task), both over active drafts only);
 * - resolve a write only once it is durable;
 * - after `close()`, reject every call with `STORE_CLOSED`.
 *
 * Errors are StoreErrors: `PROJECT_NOT_FOUND`, `PROJECT_EXISTS`, `TASK_NOT_FOUND`, `TASK_EXISTS`,
 * `DRAFT_ALREADY_ACTIVE`, `DRAFT_NOT_FOUND`, `CORRUPT_FILE`, `STORE_CLOSED`; each names what it is about.
 */
export interface DraftStore {
  readonly kind: string;

  // ---- projects ---------------------------------------------------------------------------------

  /** Every project: the home project first, then the others in the order they were created. */
  listProjects(): Promise<ProjectRecord[]>;
  /** The project of that name, or undefined. */
  getProject(name: string): Promise<ProjectRecord | undefined>;
  /**
   * Registers a project; `PROJECT_EXISTS` when the name is taken (the home project's included). A
   * home project that was never written down (no `createdAt`: the file store's folder without
   * `project.json`) is written down instead, once: it takes the description and creation time given,
   * keeps its own folders (`path` is ignored) and stays home. `parley migrate` copies a home project so.
   */
  createProject(project: NewProject): Promise<ProjectRecord>;

  // ---- tasks ------------------------------------------------------------------------------------

  /** The project's tasks in slug order; `PROJECT_NOT_FOUND` for an unknown project. */
  listTasks(project: string): Promise<TaskFile[]>;
  /** The task, or undefined; `PROJECT_NOT_FOUND` for an unknown project. */
  getTask(project: string, slug: string): Promise<TaskFile | undefined>;
  /** Creates the task; `TASK_EXISTS` when the project has that slug already (the slug is the claim). */
  createTask(project: string, task: TaskFile): Promise<TaskFile>;

  // ---- drafts -----------------------------------------------------------------------------------

  /** The task's current draft (the active one, else the last closed one), or undefined. */
  getDraft(project: string, slug: string): Promise<DraftSession | undefined>;
  /** The active draft holding this channel, or undefined. */
  findActiveDraft(channelId: string): Promise<DraftSession | undefined>;
  /** Every active draft (of one project, or of all), and the records that could not be read. */
  listActiveDrafts(filter?: { project?: string }): Promise<{ drafts: DraftSession[]; unreadable: UnreadableDraft[] }>;
  /** The task's closed drafts, oldest first. */
  listClosedDrafts(project: string, slug: string): Promise<DraftSession[]>;
  /**
   * Makes `draft` (status `active`) the current draft of its task, atomically: refused with
   * `DRAFT_ALREADY_ACTIVE` when its channel or its task already has an active draft, with nothing
   * changed. The task's previous (closed) draft is kept and listed by `listClosedDrafts`.
   * `PROJECT_NOT_FOUND` / `TASK_NOT_FOUND` when the task does not exist.
   */
  claimDraft(draft: DraftSession): Promise<DraftSession>;
  /**
   * Saves an active draft's new state (metrics, native session id); `DRAFT_NOT_FOUND` unless it is
   * its task's active draft. Its channel, project and task cannot change.
   */
  updateDraft(draft: DraftSession): Promise<DraftSession>;
  /**
   * Saves the draft as closed (status `closed`), freeing its channel and task for a new claim.
   * `DRAFT_NOT_FOUND` unless it is its task's current draft; releasing a closed draft again
   * rewrites it (idempotent).
   */
  releaseDraft(draft: DraftSession): Promise<DraftSession>;

  // ---- the draft lease (lease.ts): which server runs a draft ------------------------------------

  /**
   * Grants `owner` the lease of the active draft `sessionId` for `ttlMs` when nobody else holds it
   * (no lease, or its holder's has expired or was released) or `owner` holds it already (then it is
   * extended); otherwise answers `granted: false` naming the live holder, with nothing changed.
   * Expiry is read off the store's clock (a database's `now()`, never a client's). `DRAFT_NOT_FOUND`
   * unless an active draft has that session id. Atomic: of owners racing, one is granted.
   */
  acquireDraftLease(sessionId: string, owner: string, ttlMs: number): Promise<DraftLeaseResult>;
  /**
   * Extends the lease by `ttlMs` from now, only for its owner: granted while `owner` is still the
   * lease's owner (even past its expiry, as long as nobody took it over); otherwise `granted: false`
   * naming who holds it now, with nothing changed.
   */
  renewDraftLease(sessionId: string, owner: string, ttlMs: number): Promise<DraftLeaseResult>;
  /**
   * Ends `owner`'s lease now, so another server may take the draft over at once; a lease held by
   * another owner is left alone. Releasing the draft itself (`releaseDraft`) drops its lease too.
   */
  releaseDraftLease(sessionId: string, owner: string): Promise<void>;
  /**
   * Who holds the live lease of draft `sessionId` now, read off the store's clock, changing nothing:
   * undefined when nobody does (no lease taken, or it expired, was released or went with its draft).
   * So any server can say which one runs a draft.
   */
  readDraftLease(sessionId: string): Promise<DraftLeaseHolder | undefined>;

  // ---- role files -------------------------------------------------------------------------------

  /** Every role file of the project (name order) and those that could not be read. */
  listRoleFiles(project: string): Promise<{ files: RoleText[]; errors: RoleTextError[] }>;
  /** One role file's text, or undefined. */
  readRoleFile(project: string, role: string): Promise<RoleText | undefined>;
  /** Creates or replaces a role file (`<role>.md`). */
  writeRoleFile(project: string, role: string, text: string): Promise<RoleText>;

  /** Waits for pending writes, then refuses every call with `STORE_CLOSED`. */
  close(): Promise<void>;
}
