import { join } from 'node:path';

/**
 * Where every file of the file store lives. Each path is built from ids that passed `IdSchema`,
 * so none can leave the data folder.
 *
 * ```
 * <dataDir>/.gitignore                            `*`: nothing here is committed by accident (see data-folder.ts)
 * <dataDir>/store.lock
 * <dataDir>/store.sock                            the holder serves the store to other processes (socket-store.ts)
 * <dataDir>/tmp/                                  temp files; anything here at open is a crash leftover
 * <dataDir>/sessions/<id>/session.json
 * <dataDir>/sessions/<id>/log.jsonl               header line, then one StreamEvent per line
 * <dataDir>/sessions/<id>/checkpoints/v000001.json
 * <dataDir>/sessions/<id>/context.json
 * <dataDir>/sessions/<id>/agent-description.json
 * <dataDir>/sessions/<id>/transcripts/<name>     raw native transcripts (an import: its copy, `main` or `native-main.jsonl`, and `import-manifest.json`)
 * <dataDir>/index/sessions.jsonl                 listing index: each session's place in the order and filter fields (derived)
 * <dataDir>/index/messages-<n>.segment           search index on disk: messages, their words' postings (derived)
 * <dataDir>/index/messages.jsonl                 search index: the messages added since the segment (derived)
 * <dataDir>/index/open                           present while a process has the store open: if found at open, the indexes catch up
 * <dataDir>/features/<featureId>/feature.json
 * <dataDir>/features/<featureId>/tasks/<taskId>/task.json
 * ```
 */
export class FileLayout {
  readonly lockFile: string;
  readonly tmpDir: string;
  readonly sessionsDir: string;
  readonly featuresDir: string;
  readonly indexDir: string;
  readonly listingIndexFile: string;
  readonly messageIndexFile: string;
  readonly indexOpenMarker: string;

  constructor(readonly dataDir: string) {
    this.indexDir = join(dataDir, 'index');
    this.listingIndexFile = join(this.indexDir, 'sessions.jsonl');
    this.messageIndexFile = join(this.indexDir, 'messages.jsonl');
    this.indexOpenMarker = join(this.indexDir, 'open');
    this.lockFile = join(dataDir, 'store.lock');
    this.tmpDir = join(dataDir, 'tmp');
    this.sessionsDir = join(dataDir, 'sessions');
    this.featuresDir = join(dataDir, 'features');
  }

  sessionDir(sessionId: string): string {
    return join(this.sessionsDir, sessionId);
  }
  sessionFile(sessionId: string): string {
    return join(this.sessionsDir, sessionId, 'session.json');
  }
  logFile(sessionId: string): string {
    return join(this.sessionsDir, sessionId, 'log.jsonl');
  }
  checkpointsDir(sessionId: string): string {
    return join(this.sessionsDir, sessionId, 'checkpoints');
  }
  checkpointFile(sessionId: string, version: number): string {
    return join(this.checkpointsDir(sessionId), checkpointFileName(version));
  }
  contextFile(sessionId: string): string {
    return join(this.sessionsDir, sessionId, 'context.json');
  }
  agentDescriptionFile(sessionId: string): string {
    return join(this.sessionsDir, sessionId, 'agent-description.json');
  }
  transcriptsDir(sessionId: string): string {
    return join(this.sessionsDir, sessionId, 'transcripts');
  }
  transcriptFile(sessionId: string, name: string): string {
    return join(this.transcriptsDir(sessionId), name);
  }
  featureDir(featureId: string): string {
    return join(this.featuresDir, featureId);
  }
  featureFile(featureId: string): string {
    return join(this.featuresDir, featureId, 'feature.json');
  }
  tasksDir(featureId: string): string {
    return join(this.featuresDir, featureId, 'tasks');
  }
  taskDir(featureId: string, taskId: string): string {
    return join(this.tasksDir(featureId), taskId);
  }
  taskFile(featureId: string, taskId: string): string {
    return join(this.taskDir(featureId, taskId), 'task.json');
  }
}

/** `v000001.json`: zero-padded so a plain directory listing sorts versions in order. */
export function checkpointFileName(version: number): string {
  return `v${String(version).padStart(6, '0')}.json`;
}

/** The version of a checkpoint file name, or undefined for any other name. */
export function checkpointVersionOf(name: string): number | undefined {
  const match = /^v(\d{6,})\.json$/.exec(name);
  return match ? Number(match[1]) : undefined;
}
