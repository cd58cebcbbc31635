import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';

/** How a path differs between two trees. */
export interface TreeChange {
  path: string;
  /** `A` added, `D` deleted, `M` modified, `T` its type changed (file, symlink). */
  status: 'A' | 'D' | 'M' | 'T';
  /** The mode and blob in the second tree (`000000` and zeros for a deletion). */
  mode: string;
  blob: string;
}

interface Pending {
  resolve: (object: { type: string; content: Buffer } | undefined) => void;
  reject: (error: Error) => void;
}

/**
 * One `git cat-file --batch` kept running: objects are asked for over its stdin, several in flight,
 * answered in order. A restore reads the trees it compares and the files it writes through it, with
 * no process started per read. Idle, it does not keep Node's event loop alive.
 */
export class ObjectReader {
  private child: ChildProcessWithoutNullStreams | undefined;
  private readonly pending: Pending[] = [];
  private buffer: Buffer = Buffer.alloc(0);

  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly cwd: string,
  ) {}

  /** An object's type and bytes; undefined when the repository has no such object. */
  read(sha: string): Promise<{ type: string; content: Buffer } | undefined> {
    const child = this.start();
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.hold(true);
      child.stdin.write(`${sha}\n`);
    });
  }

  /** Ends the process. */
  close(): void {
    const child = this.child;
    this.child = undefined;
    child?.stdin.end();
    this.fail(new Error('the object reader was closed'));
  }

  private start(): ChildProcessWithoutNullStreams {
    if (this.child) return this.child;
    const child = spawn('git', ['cat-file', '--batch'], {
      cwd: this.cwd,
      env: this.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child = child;
    this.buffer = Buffer.alloc(0);
    child.stdout.on('data', (chunk: Buffer) => {
      this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
      this.drain();
    });
    child.stderr.resume();
    const gone = (error: Error): void => {
      if (this.child === child) this.child = undefined;
      this.fail(error);
    };
    child.on('error', gone);
    child.on('close', () => gone(new Error('git cat-file ended')));
    child.stdin.on('error', () => undefined);
    this.hold(false);
    return child;
  }

  /** Answers the oldest requests whose whole reply has arrived. */
  private drain(): void {
    while (this.pending.length > 0) {
      const end = this.buffer.indexOf(0x0a);
      if (end === -1) return;
      const header = this.buffer.toString('utf8', 0, end).split(' ');
      if (header[1] === 'missing' || header.length < 3) {
        this.buffer = this.buffer.subarray(end + 1);
        this.pending.shift()!.resolve(undefined);
        continue;
      }
      const size = Number(header[2]);
      if (this.buffer.length < end + 1 + size + 1) return;
      const content = Buffer.from(this.buffer.subarray(end + 1, end + 1 + size));
      this.buffer = this.buffer.subarray(end + 1 + size + 1);
      this.pending.shift()!.resolve({ type: header[1]!, content });
    }
    this.hold(false);
  }

  private fail(error: Error): void {
    for (const request of this.pending.splice(0)) request.reject(error);
  }

  /** Keeps the event loop alive only while a read is waiting. */
  private hold(busy: boolean): void {
    const child = this.child;
    if (!child) return;
    const streams = [child.stdin, child.stdout, child.stderr] as unknown as Array<{ ref?(): void; unref?(): void }>;
    if (busy && this.pending.length > 0) {
      child.ref();
      for (const stream of streams) stream.ref?.();
    } else if (this.pending.length === 0) {
      child.unref();
      for (const stream of streams) stream.unref?.();
    }
  }
}

interface TreeEntry {
  mode: string;
  sha: string;
}

const TREE_MODE = '040000';

/**
 * How tree `to` differs from tree `from`, file by file, reading only the subtrees whose ids differ
 * (ten changed files in a tree of 10,000 read a few dozen small tree objects).
 */
export async function diffTrees(reader: ObjectReader, from: string, to: string): Promise<TreeChange[]> {
  const changes: TreeChange[] = [];
  await compare(reader, from, to, '', changes);
  return changes;
}

async function compare(
  reader: ObjectReader,
  from: string | undefined,
  to: string | undefined,
  prefix: string,
  changes: TreeChange[],
): Promise<void> {
  if (from === to) return;
  const [before, after] = await Promise.all([readTree(reader, from), readTree(reader, to)]);
  const nested: Array<Promise<void>> = [];
  for (const name of new Set([...before.keys(), ...after.keys()])) {
    const old = before.get(name);
    const next = after.get(name);
    if (old && next && old.sha === next.sha && old.mode === next.mode) continue;
    const file = prefix + name;
    const oldTree = old?.mode === TREE_MODE ? old.sha : undefined;
    const nextTree = next?.mode === TREE_MODE ? next.sha : undefined;
    if (oldTree || nextTree) nested.push(compare(reader, oldTree, nextTree, `${file}/`, changes));
    const oldFile = old && !oldTree ? old : undefined;
    const nextFile = next && !nextTree ? next : undefined;
    if (nextFile)
      changes.push({
        path: file,
        status: !oldFile ? 'A' : oldFile.mode.slice(0, 2) === nextFile.mode.slice(0, 2) ? 'M' : 'T',
        mode: nextFile.mode,
        blob: nextFile.sha,
      });
    else if (oldFile) changes.push({ path: file, status: 'D', mode: '000000', blob: '0'.repeat(40) });
  }
  await Promise.all(nested);
}

async function readTree(reader: ObjectReader, sha: string | undefined): Promise<Map<string, TreeEntry>> {
  const entries = new Map<string, TreeEntry>();
  if (sha === undefined) return entries;
  const object = await reader.read(sha);
  if (!object || object.type !== 'tree') throw new Error(`the shadow repository has no tree ${sha}`);
  const data = object.content;
  let offset = 0;
  while (offset < data.length) {
    const space = data.indexOf(0x20, offset);
    const nul = data.indexOf(0, space);
    const mode = data.toString('latin1', offset, space).padStart(6, '0');
    const name = data.toString('utf8', space + 1, nul);
    entries.set(name, { mode, sha: data.toString('hex', nul + 1, nul + 21) });
    offset = nul + 21;
  }
  return entries;
}
