import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';

/**
 * The Gemini CLI's own storage under `<GEMINI_CLI_HOME>/.gemini` (layout of @google/gemini-cli
 * 0.61.0):
 * - `projects.json`: `{ projects: { <absolute cwd>: <slug> } }`, with ownership markers
 *   `tmp/<slug>/.project_root` and `history/<slug>/.project_root` holding the absolute path;
 * - `tmp/<slug>/chats/session-<YYYY-MM-DDTHH-MM>-<first 8 of id>.jsonl`: one session, JSONL,
 *   first record `{sessionId, projectHash, startTime, lastUpdated, kind}`;
 * - `settings.json`: user settings.
 * Parley reads and writes only these, so a saved session can be put back where the CLI looks.
 */
export class GeminiCliStorage {
  readonly geminiDir: string;

  constructor(readonly cliHome: string) {
    this.geminiDir = join(cliHome, '.gemini');
  }

  /** Merges `required` into settings.json, keeping every other setting the user made. */
  async ensureSettings(required: Record<string, unknown>): Promise<void> {
    const path = join(this.geminiDir, 'settings.json');
    const current = await readJson(path);
    const merged = deepMerge(isRecord(current) ? current : {}, required);
    if (JSON.stringify(merged) === JSON.stringify(current)) return;
    await writeAtomic(path, `${JSON.stringify(merged, null, 2)}\n`);
  }

  /** The slug the CLI uses for `cwd`, if it has one (registry entry with matching marker, or a marker alone). */
  async findProjectSlug(cwd: string): Promise<string | undefined> {
    const root = resolve(cwd);
    const registry = await this.readRegistry();
    const registered = registry.projects[root];
    if (registered && (await this.ownsSlug(registered, root)) !== false) return registered;
    for (const slug of await listDirectory(join(this.geminiDir, 'tmp'))) {
      if ((await this.ownsSlug(slug, root)) === true) return slug;
    }
    return undefined;
  }

  /** The slug for `cwd`, claimed the way the CLI claims one (basename, then `-1`, `-2`, ...) when missing. */
  async projectSlug(cwd: string): Promise<string> {
    const root = resolve(cwd);
    const existing = await this.findProjectSlug(root);
    if (existing) {
      await this.writeMarkers(existing, root);
      return existing;
    }
    const registry = await this.readRegistry();
    const taken = new Set(Object.values(registry.projects));
    const base = slugify(basename(root) || 'project');
    let slug = base;
    for (let counter = 1; taken.has(slug) || (await this.ownsSlug(slug, root)) === false; counter++)
      slug = `${base}-${counter}`;
    registry.projects[root] = slug;
    await this.writeMarkers(slug, root);
    await writeAtomic(join(this.geminiDir, 'projects.json'), JSON.stringify(registry, null, 2));
    return slug;
  }

  /** The session file of `sessionId` for `cwd`, the most recently written one if several. */
  async findSessionFile(cwd: string, sessionId: string): Promise<string | undefined> {
    const slug = await this.findProjectSlug(cwd);
    if (!slug) return undefined;
    const chats = join(this.geminiDir, 'tmp', slug, 'chats');
    const suffixes = [`-${sessionId.slice(0, 8)}.jsonl`, `-${sessionId.slice(0, 8)}.json`];
    const candidates = (await listDirectory(chats)).filter(
      (name) => name.startsWith('session-') && suffixes.some((suffix) => name.endsWith(suffix)),
    );
    for (const name of candidates.sort().reverse()) {
      const path = join(chats, name);
      const header = firstRecord(await readFile(path, 'utf8'));
      if (header?.['sessionId'] === sessionId) return path;
    }
    return undefined;
  }

  async readSession(cwd: string, sessionId: string): Promise<string | undefined> {
    const path = await this.findSessionFile(cwd, sessionId);
    return path ? readFile(path, 'utf8') : undefined;
  }

  /**
   * Puts a saved session back where the CLI looks for `cwd`. The header's `projectHash` is set to
   * this machine's project root (the CLI writes sha256 of the absolute cwd); every other byte is kept.
   * A different file already there for the session is moved aside (`.replaced-<time>`), never deleted.
   */
  async writeSession(cwd: string, sessionId: string, transcript: string): Promise<string> {
    const root = resolve(cwd);
    const slug = await this.projectSlug(root);
    const chats = join(this.geminiDir, 'tmp', slug, 'chats');
    await mkdir(chats, { recursive: true });
    const header = firstRecord(transcript);
    if (header && header['sessionId'] !== sessionId) {
      throw new Error(`the transcript belongs to session ${String(header['sessionId'])}, not ${sessionId}`);
    }
    const startTime = typeof header?.['startTime'] === 'string' ? header['startTime'] : new Date().toISOString();
    const stamp = startTime.slice(0, 16).replace(/:/g, '-');
    const existing = await this.findSessionFile(root, sessionId);
    const path = existing ?? join(chats, `session-${stamp}-${sessionId.slice(0, 8)}.jsonl`);
    const content = rehomeTranscript(transcript, projectHash(root));
    if (existing !== undefined) {
      const current = await readFile(existing, 'utf8');
      // A local copy that already holds this transcript and more (turns run here since) is kept;
      // one that differs is moved aside, never deleted (the CLI reads only `*.jsonl` / `*.json`).
      if (current.startsWith(content)) return existing;
      await rename(existing, `${existing}.replaced-${Date.now()}`);
    }
    await writeAtomic(path, content);
    return path;
  }

  private async readRegistry(): Promise<{ projects: Record<string, string> }> {
    const data = await readJson(join(this.geminiDir, 'projects.json'));
    if (isRecord(data) && isRecord(data['projects'])) {
      const projects = Object.fromEntries(
        Object.entries(data['projects']).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
      );
      return { projects };
    }
    return { projects: {} };
  }

  /** true: the slug's markers name `root`; false: they name another folder; undefined: no marker. */
  private async ownsSlug(slug: string, root: string): Promise<boolean | undefined> {
    let seen: boolean | undefined;
    for (const base of ['tmp', 'history']) {
      try {
        const owner = (await readFile(join(this.geminiDir, base, slug, '.project_root'), 'utf8')).trim();
        if (resolve(owner) !== root) return false;
        seen = true;
      } catch {
        // No marker in this folder.
      }
    }
    return seen;
  }

  private async writeMarkers(slug: string, root: string): Promise<void> {
    for (const base of ['tmp', 'history']) {
      const folder = join(this.geminiDir, base, slug);
      await mkdir(folder, { recursive: true });
      await writeFile(join(folder, '.project_root'), root);
    }
  }
}

/** sha256 of the absolute project root, as the CLI writes it in session headers. */
export function projectHash(root: string): string {
  return createHash('sha256').update(resolve(root)).digest('hex');
}

function rehomeTranscript(transcript: string, hash: string): string {
  return transcript
    .split('\n')
    .map((line) => {
      if (!line.includes('"projectHash"')) return line;
      try {
        const record = JSON.parse(line) as unknown;
        if (isRecord(record) && typeof record['projectHash'] === 'string' && typeof record['sessionId'] === 'string') {
          return JSON.stringify({ ...record, projectHash: hash });
        }
      } catch {
        // Not a JSON line: kept as it is; the CLI skips what it cannot read.
      }
      return line;
    })
    .join('\n');
}

function firstRecord(text: string): Record<string, unknown> | undefined {
  const trimmed = text.trimStart();
  // The older format is one JSON object; the current one is JSONL with the header first.
  const line = trimmed.startsWith('{\n') || trimmed.startsWith('{\r\n') ? trimmed : (trimmed.split('\n', 1)[0] ?? '');
  try {
    const record = JSON.parse(line) as unknown;
    return isRecord(record) ? record : undefined;
  } catch {
    return undefined;
  }
}

export function slugify(text: string): string {
  return (
    text
      .toLowerCase()
      .replace(/[^a-z0-9]/g, '-')
      .replace(/-+/g, '-')
      .replace(/^-|-$/g, '') || 'project'
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function deepMerge(base: Record<string, unknown>, overrides: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(overrides)) {
    const current = merged[key];
    merged[key] = isRecord(value) && isRecord(current) ? deepMerge(current, value) : value;
  }
  return merged;
}

async function readJson(path: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as unknown;
  } catch {
    return undefined;
  }
}

async function listDirectory(path: string): Promise<string[]> {
  try {
    return await readdir(path);
  } catch {
    return [];
  }
}

async function writeAtomic(path: string, content: string): Promise<void> {
  await mkdir(join(path, '..'), { recursive: true });
  const temporary = `${path}.${randomUUID()}.tmp`;
  await writeFile(temporary, content);
  await rename(temporary, path);
}
