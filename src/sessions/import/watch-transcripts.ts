import { watch as watchPath, promises as fs, type FSWatcher } from 'node:fs';
import { createHash } from 'node:crypto';
import { basename, join, resolve, sep } from 'node:path';
import type { TranscriptWarning } from '../../backends/index.js';
import { isParleyError } from '../../conversation/index.js';
import { importTranscripts, type ImportOptions, type ImportResult, type LogIndex } from './import-transcripts.js';

/**
 * `parley import --watch <path>` and `parley serve --watch-native`: keeps importing a file or a
 * folder while Claude Code, the Gemini CLI or Codex writes it, so a session running in another tool can be
 * followed live. `fs.watch` is the wake-up; a stat of each followed file (on every wake-up, and
 * every `checkIntervalMs` as the net under a lost `fs.watch` event or a folder that does not exist
 * yet) decides whether anything changed. Each pass is an import (`importTranscripts`, live) of the
 * session file that changed when it lies right in the followed folder, else of the whole path:
 * unchanged sessions are skipped by their fingerprints, a changed one gets only what its log lacks,
 * through the store — so a server on the same store delivers the new events to its clients. A pass
 * reads the changed session's files from their start (the parser's rewind and ordering rules need
 * the whole chain), so it costs what importing that session costs.
 *
 * A followed file that shrank or whose beginning changed was rewritten (a rewind, a truncation, an
 * editor): it is read again from its start like every pass, and the session gets a `system` block
 * saying so, with a warning; blocks it no longer has stay in the session's log (the log only grows).
 */

export interface WatchTranscriptsOptions extends Omit<ImportOptions, 'live' | 'signal' | 'logIndexes'> {
  /** Stops the watcher like `stop()`. */
  signal?: AbortSignal;
  /** After each pass that imported or updated something (and after the first pass, always). */
  onSync?: (result: ImportResult) => void;
  /** A followed file was rewritten or truncated; each parser warning of a pass comes through `onSync`'s result. */
  onWarning?: (warning: TranscriptWarning) => void;
  /** A pass failed (the store, an unreadable folder); the watcher goes on and tries again at the next change. */
  onError?: (error: unknown) => void;
  /** A path that does not exist yet is followed until it appears (a project's native folder before the tool first runs there); default: an error. */
  waitForPath?: boolean;
  /** Period of the stat check under `fs.watch`, in ms. Default 250 (the 500 ms promise holds even when a wake-up is lost). */
  checkIntervalMs?: number;
}

/** A running `watchTranscripts`: `close()` stops it. */
export interface TranscriptWatcher {
  /** The first pass (an error if the store failed). A path with nothing to import yet is followed, not an error. */
  readonly ready: Promise<ImportResult>;
  /** Stops watching; settles once the pass under way, if any, has finished or stopped. */
  stop(): Promise<void>;
}

/** What tells a followed file's changes apart: it grew, or it was rewritten. */
interface FileState {
  size: number;
  mtimeMs: number;
  /** sha256 of the first `headBytes` bytes. */
  head: string;
  headBytes: number;
}

const HEAD_BYTES = 4096;

/** Watches a folder of native transcripts and imports what is added or grows. */
export function watchTranscripts(path: string, options: WatchTranscriptsOptions): TranscriptWatcher {
  const watcher = new Watcher(resolve(path), options);
  return { ready: watcher.start(), stop: () => watcher.stop() };
}

class Watcher {
  private readonly controller = new AbortController();
  private readonly files = new Map<string, FileState>();
  /** What the followed sessions' logs hold, so a pass does not read them again (this watcher is their writer). */
  private readonly logIndexes = new Map<string, LogIndex>();
  /** Main transcript → the session it was imported into. */
  private readonly sessionOf = new Map<string, string>();
  private fsWatcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** What the next pass imports: the whole path, or these files. */
  private pending: { whole: boolean; files: Set<string> } = { whole: false, files: new Set() };
  /** The followed path is a folder (known once it exists). */
  private folder = false;
  private stopped = false;
  private rewrites = 0;

  constructor(
    private readonly root: string,
    private readonly options: WatchTranscriptsOptions,
  ) {
    options.signal?.addEventListener('abort', () => void this.stop(), { once: true });
  }

  async start(): Promise<ImportResult> {
    const first = await this.pass(true);
    this.timer = setInterval(() => void this.check(), this.options.checkIntervalMs ?? 250);
    this.timer.unref();
    await this.attach();
    return first;
  }

  async stop(): Promise<void> {
    if (this.stopped) return this.running;
    this.stopped = true;
    clearInterval(this.timer);
    this.fsWatcher?.close();
    this.controller.abort();
    await this.running;
  }

  /** Starts `fs.watch` once the path exists (a project's native folder may appear only when the tool first runs). */
  private async attach(): Promise<void> {
    if (this.fsWatcher !== undefined || this.stopped) return;
    const stat = await fs.stat(this.root).catch(() => undefined);
    if (stat === undefined || this.stopped || this.fsWatcher !== undefined) return;
    try {
      // Recursive on a folder: Claude Code's subagent files live in a folder per session.
      this.folder = stat.isDirectory();
      this.fsWatcher = watchPath(this.root, { recursive: this.folder }, (_event, name) =>
        this.request(this.targetOf(name)),
      );
      this.fsWatcher.on('error', () => {
        // The folder went away; the stat check attaches again when it is back.
        this.fsWatcher?.close();
        this.fsWatcher = undefined;
      });
    } catch (error) {
      this.options.onError?.(error);
    }
  }

  /**
   * A session file right in the followed folder (Claude Code's `<id>.jsonl`, the Gemini CLI's
   * `session-*.jsonl`), or a Codex rollout anywhere under it (`YYYY/MM/DD/rollout-*.jsonl`), is
   * imported on its own (it brings its subagent files), so a tool writing one session does not make
   * every pass read the whole folder; anything else asks for a whole pass.
   */
  private targetOf(name: string | Buffer | null): string | undefined {
    if (!this.folder || typeof name !== 'string' || !/\.jsonl?$/.test(name)) return undefined;
    if (name.includes(sep) && !/^rollout-.+\.jsonl$/.test(basename(name))) return undefined;
    return join(this.root, name);
  }

  /** The stat check: any followed file changed, or the path appeared. */
  private async check(): Promise<void> {
    if (this.stopped || this.running !== undefined) return;
    if (this.fsWatcher === undefined) {
      await this.attach();
      if (this.fsWatcher !== undefined) this.request();
      return;
    }
    for (const [file, known] of this.files) {
      const stat = await fs.stat(file).catch(() => undefined);
      if (stat === undefined || stat.size !== known.size || stat.mtimeMs !== known.mtimeMs) {
        this.request(this.folder ? file : undefined);
        return;
      }
    }
  }

  /**
   * Runs a pass now (of one file, or of the whole path when `target` is undefined), or once more
   * after the one under way, with every target asked for meanwhile: changes during a pass are never lost.
   */
  private request(target?: string): void {
    if (this.stopped) return;
    if (target === undefined) this.pending.whole = true;
    else this.pending.files.add(target);
    if (this.running !== undefined) return;
    this.running = (async () => {
      while ((this.pending.whole || this.pending.files.size > 0) && !this.stopped) {
        const targets = this.pending.whole ? undefined : [...this.pending.files];
        this.pending = { whole: false, files: new Set() };
        await this.pass(false, targets).catch((error: unknown) => this.options.onError?.(error));
      }
    })().finally(() => {
      this.running = undefined;
    });
  }

  /** One import: of the whole path, or of the session files in `targets`. */
  private async pass(first: boolean, targets?: string[]): Promise<ImportResult> {
    // Stat before reading: a change made while the import reads is seen by the next check.
    const rewritten: string[] = [];
    const states = new Map<string, FileState>();
    for (const [file, known] of this.files) {
      if (targets !== undefined && !targets.includes(file)) continue;
      const state = await fileState(file, known.headBytes);
      if (state === undefined) continue;
      if (state.size < known.size || (state.headBytes === known.headBytes && state.head !== known.head))
        rewritten.push(file);
      const now = await fileState(file);
      if (now !== undefined) states.set(file, now);
    }
    // Marked before the import, so the session's log says where the new reading of the file starts.
    const warnings: TranscriptWarning[] = [];
    for (const file of rewritten) warnings.push(await this.noteRewrite(file));
    const result: ImportResult = { path: this.root, sessions: [], warnings: [], skipped: [] };
    for (const path of targets ?? [this.root]) {
      try {
        const part = await importTranscripts(path, {
          ...this.options,
          live: true,
          signal: this.controller.signal,
          logIndexes: this.logIndexes,
        });
        result.sessions.push(...part.sessions);
        result.warnings.push(...part.warnings);
        result.skipped.push(...part.skipped);
      } catch (error) {
        if (this.stopped && isParleyError(error, 'IMPORT_ABORTED')) return result;
        // A target that is gone or is no session (a file the tool writes beside them) is nothing to do.
        const missing =
          (targets !== undefined || this.options.waitForPath === true) && isParleyError(error, 'IMPORT_PATH_NOT_FOUND');
        if (missing || isParleyError(error, 'NOTHING_TO_IMPORT')) continue;
        // A failed pass may have noted blocks that never reached the log: the next one reads the logs again.
        this.logIndexes.clear();
        throw error;
      }
    }
    result.warnings.unshift(...warnings);
    for (const session of result.sessions) {
      this.sessionOf.set(session.path, session.sessionId);
      if (!states.has(session.path)) {
        const state = await fileState(session.path);
        if (state !== undefined) states.set(session.path, state);
      }
    }
    for (const [file, state] of states) this.files.set(file, state);
    if (first || result.sessions.some((session) => session.status !== 'unchanged') || rewritten.length > 0)
      this.options.onSync?.(result);
    return result;
  }

  private async noteRewrite(file: string): Promise<TranscriptWarning> {
    const sessionId = this.sessionOf.get(file);
    const message = `${basename(file)} was rewritten or truncated while it was followed; it was imported again from its start (what it no longer holds stays in the session)`;
    const warning: TranscriptWarning = { code: 'TRANSCRIPT_REWRITTEN', message, file: basename(file) };
    this.options.onWarning?.(warning);
    if (sessionId === undefined) return warning;
    const at = (this.options.now ?? Date.now)();
    await this.options.store.append(sessionId, [
      {
        type: 'block_complete',
        conversationId: 'main',
        at,
        block: {
          type: 'system',
          id: `import-rewritten-${at}-${++this.rewrites}`,
          createdAt: at,
          completedAt: at,
          subtype: 'info',
          content: message,
          data: { code: 'TRANSCRIPT_REWRITTEN', path: file },
        },
      },
    ]);
    return warning;
  }
}

/** Size, modification time and a hash of the first bytes (`headBytes`, default up to 4 KiB); undefined when the file is gone. */
async function fileState(path: string, headBytes?: number): Promise<FileState | undefined> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const stat = await handle.stat();
    const length = Math.min(headBytes ?? HEAD_BYTES, stat.size);
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buffer, 0, length, 0);
    return {
      size: stat.size,
      mtimeMs: stat.mtimeMs,
      head: createHash('sha256').update(buffer.subarray(0, bytesRead)).digest('hex'),
      headBytes: bytesRead,
    };
  } finally {
    await handle.close();
  }
}
