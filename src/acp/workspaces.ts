import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { AgentBackend } from '../backends/index.js';
import { AgentPool, ProjectCatalog, WorkerSlots, Workers, type ProjectLocation } from '../draft/index.js';
import { createSessionManager, type SessionManager, type Summarizer } from '../sessions/index.js';

/** The back ends a project's sessions may run on, as the composition root (the CLI) resolves them. */
export interface AcpBackends {
  /** A back end by name and model; default: the configured one. May throw for an unknown name. */
  backendFor(name?: string, model?: string): AgentBackend;
  /** The configured default back end's name. */
  defaultBackend: string;
  /** Every back end a session may be switched to (the `backend` config option). */
  backendNames: string[];
  /** The model compaction asks; undefined: checkpoints are built structurally. */
  summarize?: Summarizer;
  /** Lines for the log (stderr): the scripted fallback, configuration warnings. */
  notices: string[];
}

/**
 * One data folder open in this process: its SessionManager (which holds the folder's lock, or uses
 * the store of the Parley process that holds it), its
 * projects, roles and tasks, its back ends, and the workers its sessions start. Sessions of every
 * editor window whose `cwd` maps to the same data folder share it.
 */
export interface Workspace {
  dataDir: string;
  projectRoot: string;
  manager: SessionManager;
  catalog: ProjectCatalog;
  project: ProjectLocation;
  backends: AcpBackends;
  workers: Workers;
}

export interface WorkspacesOptions {
  /** One data folder for every session; default: `.parley` in each session's `cwd`. */
  dataDir?: string;
  openBackends(projectRoot: string, dataDir: string): Promise<AcpBackends>;
  log(message: string): void;
  maxConcurrentWorkers?: number;
}

export class Workspaces {
  private readonly open = new Map<string, Promise<Workspace>>();

  constructor(private readonly options: WorkspacesOptions) {}

  dataDirOf(cwd: string): string {
    return this.options.dataDir ?? path.join(path.resolve(cwd), '.parley');
  }

  /** Whether `cwd`'s data folder exists with sessions in it (checked without creating anything). */
  async holdsSessions(cwd: string): Promise<boolean> {
    if (this.open.has(this.dataDirOf(cwd))) return true;
    try {
      return (await stat(path.join(this.dataDirOf(cwd), 'sessions'))).isDirectory();
    } catch {
      return false;
    }
  }

  /** The workspace of `cwd`, opened on first use (creating its data folder). */
  forCwd(cwd: string): Promise<Workspace> {
    const dataDir = this.dataDirOf(cwd);
    let workspace = this.open.get(dataDir);
    if (!workspace) {
      workspace = this.openWorkspace(path.resolve(cwd), dataDir);
      this.open.set(dataDir, workspace);
      // A folder that failed to open (locked by another Parley) is tried again next time.
      workspace.catch(() => this.open.delete(dataDir));
    }
    return workspace;
  }

  /** The workspaces opened so far. */
  async opened(): Promise<Workspace[]> {
    const settled = await Promise.allSettled(this.open.values());
    return settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  }

  private async openWorkspace(projectRoot: string, dataDir: string): Promise<Workspace> {
    const backends = await this.options.openBackends(projectRoot, dataDir);
    for (const notice of backends.notices) this.options.log(notice);
    const manager = await createSessionManager({
      dataDir,
      projectRoot,
      ...(backends.summarize ? { summarize: backends.summarize } : {}),
    });
    manager.on('store:warning', (warning) => this.options.log(`store: ${warning.message}`));
    // Another Parley process on the same data folder (a second editor's `parley acp`) writes through
    // the same store: its events reach the sessions open here as this process's own do.
    manager.followStoreChanges({
      onError: (error, sessionId) => this.options.log(`session ${sessionId} not brought up to date: ${String(error)}`),
    });
    const catalog = new ProjectCatalog({ projectRoot, dataDir, clock: Date.now });
    const pool = new AgentPool();
    const workers = new Workers({
      manager,
      pool,
      slots: new WorkerSlots(this.options.maxConcurrentWorkers ?? 2),
      clock: Date.now,
      onStatus: () => undefined,
    });
    try {
      return { dataDir, projectRoot, manager, catalog, project: await catalog.current(), backends, workers };
    } catch (error) {
      await manager.close();
      throw error;
    }
  }

  /** Ends every worker and closes every data folder (releasing its lock). */
  async close(): Promise<void> {
    for (const workspace of await this.opened()) {
      await workspace.workers.killAll(() => true).catch(() => undefined);
      await workspace.catalog.store.close().catch(() => undefined);
      await workspace.manager
        .close()
        .catch((error: unknown) => this.options.log(`closing ${workspace.dataDir}: ${String(error)}`));
    }
    this.open.clear();
  }
}
