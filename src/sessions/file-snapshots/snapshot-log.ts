import { promises as fs } from 'node:fs';
import path from 'node:path';
import * as z from 'zod';

/** One file snapshot: the project's tree at a point of a session's history. */
export const FileSnapshotSchema = z.object({
  /** Order of taking, over every session of the project. */
  n: z.number().int().nonnegative(),
  sessionId: z.string().min(1),
  /**
   * The point in the session's history it belongs to: the seq of the turn's user message for
   * `before_turn` (the tree as it was when the prompt was sent), of the turn's closing event for
   * `after_turn`, of the point restored to for `restore`.
   */
  seq: z.number().int().min(-1),
  phase: z.enum(['before_turn', 'after_turn', 'restore']),
  /** The id of the turn's user message. */
  turnId: z.string().optional(),
  /** The git tree of the project in the shadow repository. */
  tree: z.string().regex(/^[0-9a-f]{40,64}$/),
  /** Milliseconds since the epoch. */
  at: z.number(),
});
/** One file snapshot: the project's tree at a point of a session's history. */
export type FileSnapshot = z.infer<typeof FileSnapshotSchema>;

/**
 * Every snapshot of the project, one JSON line each, in order of taking. An append resolves once it
 * is on disk (fdatasync); a line a crash tore is dropped on open. Pruning rewrites the file whole
 * (temp file, fsync, rename).
 */
export class SnapshotLog {
  private entries: FileSnapshot[] | undefined;

  constructor(private readonly file: string) {}

  /** Every snapshot, oldest first. */
  async all(): Promise<readonly FileSnapshot[]> {
    return this.load();
  }

  private async load(): Promise<FileSnapshot[]> {
    if (this.entries) return this.entries;
    let text = '';
    try {
      text = await fs.readFile(this.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    const entries: FileSnapshot[] = [];
    const complete = text.endsWith('\n') ? text : text.slice(0, text.lastIndexOf('\n') + 1);
    for (const line of complete.split('\n')) {
      if (line === '') continue;
      const parsed = FileSnapshotSchema.safeParse(safeJson(line));
      if (parsed.success) entries.push(parsed.data);
    }
    // A torn last line goes, so the next append starts on a line of its own.
    if (complete.length !== text.length) await fs.truncate(this.file, Buffer.byteLength(complete));
    this.entries = entries;
    return entries;
  }

  /** The next snapshot's `n`. */
  async nextNumber(): Promise<number> {
    const entries = await this.all();
    return entries.length === 0 ? 0 : entries[entries.length - 1]!.n + 1;
  }

  async append(entry: FileSnapshot): Promise<void> {
    const entries = await this.load();
    const handle = await fs.open(this.file, 'a');
    try {
      await handle.write(`${JSON.stringify(entry)}\n`);
      await handle.datasync();
    } finally {
      await handle.close();
    }
    entries.push(entry);
  }

  /** Keeps only `kept`, in their order. */
  async rewrite(kept: readonly FileSnapshot[]): Promise<void> {
    const temp = `${this.file}.${process.pid}.tmp`;
    const handle = await fs.open(temp, 'w');
    try {
      await handle.writeFile(kept.map((entry) => `${JSON.stringify(entry)}\n`).join(''));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(temp, this.file);
    await syncFolder(path.dirname(this.file));
    this.entries = [...kept];
  }
}

/** fsync of a folder, so a rename in it survives a crash. */
export async function syncFolder(folder: string): Promise<void> {
  const handle = await fs.open(folder, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function safeJson(line: string): unknown {
  try {
    return JSON.parse(line) as unknown;
  } catch {
    return undefined;
  }
}
