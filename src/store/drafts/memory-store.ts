import { ValidationError } from '../../conversation/index.js';
import { checkLeaseInput, LeaseTable, noActiveDraft } from './lease.js';
import { checkProjectInput, type DraftStoreHome } from './home.js';
import {
  NewProjectSchema,
  TaskFileSchema,
  type DraftSession,
  type ProjectRecord,
  type RoleText,
  type TaskFile,
} from './records.js';
import type { DraftStore } from './draft-store.js';
import {
  byStart,
  checkDraft,
  checkSameDraft,
  claimConflict,
  projectExists,
  projectNotFound,
  taskExists,
  taskNotFound,
} from './rules.js';
import { checkId, checkRecord, storeClosed } from '../validate.js';

interface TaskEntry {
  task: TaskFile;
  current?: DraftSession;
  closed: DraftSession[];
}

interface ProjectEntry {
  record: ProjectRecord;
  tasks: Map<string, TaskEntry>;
  roles: Map<string, string>;
}

/**
 * The reference DraftStore: everything in memory, cloned on every read and write. Each call runs
 * to completion without yielding between its check and its write, which is what makes a claim
 * atomic here (a database gets the same from its unique indexes).
 */
export function createMemoryDraftStore(options: { home: DraftStoreHome }): DraftStore {
  const home = checkProjectInput(options.home);
  const projects = new Map<string, ProjectEntry>([
    [home.name, { record: { ...home, home: true }, tasks: new Map(), roles: new Map() }],
  ]);
  const leases = new LeaseTable();
  let closed = false;

  function open(): void {
    if (closed) throw storeClosed('memory draft');
  }
  function projectOf(name: string): ProjectEntry {
    open();
    const id = checkId(name, 'project');
    const entry = projects.get(id);
    if (!entry) throw projectNotFound(id);
    return entry;
  }
  function taskOf(draft: DraftSession): TaskEntry {
    const entry = projectOf(draft.project).tasks.get(draft.taskSlug);
    if (!entry) throw taskNotFound(draft.project, draft.taskSlug);
    return entry;
  }
  function* activeDrafts(): Iterable<DraftSession> {
    for (const project of projects.values()) {
      for (const task of project.tasks.values()) if (task.current?.status === 'active') yield task.current;
    }
  }
  const copy = <T>(value: T): T => structuredClone(value);
  const roleText = (project: string, name: string, text: string): RoleText => ({
    name,
    location: `memory:${project}/roles/${name}.md`,
    text,
  });

  return {
    kind: 'memory',

    async listProjects() {
      open();
      return [...projects.values()].map((entry) => copy(entry.record));
    },
    async getProject(name) {
      open();
      const entry = projects.get(checkId(name, 'project'));
      return entry ? copy(entry.record) : undefined;
    },
    async createProject(input) {
      open();
      checkId(input?.name, 'project');
      const project = checkRecord(NewProjectSchema, input, 'project');
      const taken = projects.get(project.name);
      if (taken?.record.home && taken.record.createdAt === undefined) {
        // The home project never written down: it keeps its folders and becomes described.
        const { path: _path, ...details } = project;
        taken.record = { ...taken.record, ...details };
        return copy(taken.record);
      }
      if (taken) throw projectExists(project.name);
      const path = project.path ?? `${home.dataDir}/projects/${project.name}`;
      const record: ProjectRecord = { ...project, path, dataDir: `${path}/.parley`, home: false };
      projects.set(project.name, { record, tasks: new Map(), roles: new Map() });
      return copy(record);
    },

    async listTasks(project) {
      return [...projectOf(project).tasks.values()]
        .map((entry) => copy(entry.task))
        .sort((a, b) => (a.slug < b.slug ? -1 : 1));
    },
    async getTask(project, slug) {
      const entry = projectOf(project).tasks.get(checkId(slug, 'task slug'));
      return entry ? copy(entry.task) : undefined;
    },
    async createTask(project, input) {
      const entry = projectOf(project);
      checkId(input?.slug, 'task slug');
      const task = checkRecord(TaskFileSchema, input, 'task');
      if (entry.tasks.has(task.slug)) throw taskExists(project, task.slug);
      entry.tasks.set(task.slug, { task, closed: [] });
      return copy(task);
    },

    async getDraft(project, slug) {
      const entry = projectOf(project).tasks.get(checkId(slug, 'task slug'));
      return entry?.current ? copy(entry.current) : undefined;
    },
    async findActiveDraft(channelId) {
      open();
      for (const draft of activeDrafts()) if (draft.channelId === channelId) return copy(draft);
      return undefined;
    },
    async listActiveDrafts(filter = {}) {
      open();
      if (filter.project !== undefined) projectOf(filter.project);
      const drafts = [...activeDrafts()].filter(
        (draft) => filter.project === undefined || draft.project === filter.project,
      );
      return { drafts: copy(drafts), unreadable: [] };
    },
    async listClosedDrafts(project, slug) {
      const entry = projectOf(project).tasks.get(checkId(slug, 'task slug'));
      if (!entry) return [];
      const all = entry.current?.status === 'closed' ? [...entry.closed, entry.current] : entry.closed;
      return copy(all).sort(byStart);
    },
    async claimDraft(input) {
      open();
      const draft = checkDraft(input, 'active', 'claimDraft');
      const task = taskOf(draft);
      const conflict = claimConflict(draft, activeDrafts());
      if (conflict) throw conflict;
      if (task.current) task.closed.push(task.current);
      task.current = draft;
      return copy(draft);
    },
    async updateDraft(input) {
      open();
      const draft = checkDraft(input, 'active', 'updateDraft');
      const task = taskOf(draft);
      checkSameDraft(draft, task.current, true);
      task.current = draft;
      return copy(draft);
    },
    async releaseDraft(input) {
      open();
      const draft = checkDraft(input, 'closed', 'releaseDraft');
      const task = taskOf(draft);
      checkSameDraft(draft, task.current, false);
      task.current = draft;
      leases.forget(draft.sessionId);
      return copy(draft);
    },

    async acquireDraftLease(sessionId, owner, ttlMs) {
      open();
      const lease = checkLeaseInput(sessionId, owner, ttlMs);
      if (![...activeDrafts()].some((draft) => draft.sessionId === lease.sessionId))
        throw noActiveDraft(lease.sessionId);
      return leases.acquire(lease.sessionId, lease.owner, lease.ttlMs);
    },
    async renewDraftLease(sessionId, owner, ttlMs) {
      open();
      const lease = checkLeaseInput(sessionId, owner, ttlMs);
      return leases.renew(lease.sessionId, lease.owner, lease.ttlMs);
    },
    async releaseDraftLease(sessionId, owner) {
      open();
      const lease = checkLeaseInput(sessionId, owner);
      leases.release(lease.sessionId, lease.owner);
    },
    async readDraftLease(sessionId) {
      open();
      return leases.read(checkId(sessionId, 'session id'));
    },

    async listRoleFiles(project) {
      const entry = projectOf(project);
      const names = [...entry.roles.keys()].sort();
      return { files: names.map((name) => roleText(project, name, entry.roles.get(name)!)), errors: [] };
    },
    async readRoleFile(project, role) {
      const entry = projectOf(project);
      const name = checkId(role, 'role');
      const text = entry.roles.get(name);
      return text === undefined ? undefined : roleText(project, name, text);
    },
    async writeRoleFile(project, role, text) {
      const entry = projectOf(project);
      const name = checkId(role, 'role');
      if (typeof text !== 'string') throw new ValidationError(`Role file "${name}" must be text.`);
      entry.roles.set(name, text);
      return roleText(project, name, text);
    },

    async close() {
      closed = true;
    },
  };
}
