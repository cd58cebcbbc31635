import { isObject, stringOf, type JsonObject } from '../transcripts/json.js';

/**
 * Codex's patch format, read in one place. The model writes a patch (`*** Begin Patch`,
 * `*** Add File: p`, `*** Update File: p` with `@@` hunks, `*** Delete File: p`, `*** Move to: q`,
 * `*** End Patch`) through the `apply_patch` tool or an `apply_patch <<'EOF'` shell command:
 *
 *     *** Begin Patch
 *     *** Update File: src/app.ts
 *     @@ function main
 *      context
 *     -old line
 *     +new line
 *     *** End Patch
 *
 * `parseCodexPatch` gives its sections with their hunks; the import shows them as edits
 * (`editsOfPatch`), and a live turn undoes them on the file to build a diff with real line numbers
 * (`file-diffs.ts`). Codex also reports what it applied per path (`patch_apply_begin`/`_end`, a
 * `FileChange` item, the app server's `fileChange`), with a unified diff for an update: that report
 * is preferred where there is one, since it is the change that happened (`editsOfChanges`).
 */

/** One line of a hunk: context, removed or added. */
export interface PatchLine {
  kind: ' ' | '-' | '+';
  text: string;
}

/** One file's part of a patch. */
export interface PatchSection {
  kind: 'add' | 'update' | 'delete';
  path: string;
  movedTo?: string;
  /** Hunks of an update; an add's whole content is one hunk of `+` lines. */
  hunks: PatchLine[][];
}

/** One file a patch touched, as the conversation shows it. */
export interface FileEdit {
  path: string;
  kind: 'add' | 'update' | 'delete';
  /** The new file's text (add) or the removed file's (delete), when known. */
  content?: string;
  /** A unified diff (update), when Codex reported one or the patch's hunks gave one. */
  diff?: string;
  movePath?: string;
}

const BEGIN = '*** Begin Patch';
const END = '*** End Patch';
const FILE_HEADER = /^\*\*\* (Add|Update|Delete) File: (.+)$/;
const MOVE = /^\*\*\* Move to: (.+)$/;
const END_OF_FILE = '*** End of File';

/**
 * The sections of a patch, or [] when it is not one. A line inside a hunk without a `' '`, `-` or
 * `+` mark (an empty line, most often) is context, as Codex applies it. `*** End of File` is
 * skipped; any other `*** ` line (`*** End Patch`) ends the section, so nothing after it is read.
 */
export function parseCodexPatch(patch: string): PatchSection[] {
  const sections: PatchSection[] = [];
  let current: PatchSection | undefined;
  let hunk: PatchLine[] | undefined;
  for (const line of patch.split('\n')) {
    const header = FILE_HEADER.exec(line);
    if (header) {
      current = { kind: header[1]!.toLowerCase() as PatchSection['kind'], path: header[2]!.trim(), hunks: [] };
      hunk = undefined;
      sections.push(current);
      continue;
    }
    if (!current) continue;
    const move = MOVE.exec(line);
    if (move) {
      current.movedTo = move[1]!.trim();
      continue;
    }
    if (line === END_OF_FILE) continue;
    if (line.startsWith('*** ')) {
      current = undefined;
      continue;
    }
    if (line.startsWith('@@')) {
      hunk = [];
      current.hunks.push(hunk);
      continue;
    }
    if (!hunk) {
      hunk = [];
      current.hunks.push(hunk);
    }
    const kind = line[0];
    hunk.push(kind === ' ' || kind === '-' || kind === '+' ? { kind, text: line.slice(1) } : { kind: ' ', text: line });
  }
  return sections;
}

/** The patch text of an `apply_patch <<'EOF' … EOF` shell command (or the command itself when it is a patch), else undefined. */
export function patchOfCommand(command: string): string | undefined {
  const start = command.indexOf(BEGIN);
  if (start === -1 || !/(^|\s)apply_patch\b/.test(command.slice(0, start) || 'apply_patch')) return undefined;
  const end = command.indexOf(END, start);
  return end === -1 ? command.slice(start) : command.slice(start, end + END.length);
}

/** The files of a patch as edits, with a unified diff built from each update's hunks (line numbers counted from the hunk's own start). */
export function editsOfPatch(patch: string): FileEdit[] {
  return parseCodexPatch(patch).map((section) => {
    const edit: FileEdit = { path: section.path, kind: section.kind };
    if (section.movedTo !== undefined) edit.movePath = section.movedTo;
    const lines = section.hunks.flat();
    if (section.kind === 'add') edit.content = lines.map((line) => `${line.text}\n`).join('');
    else if (section.kind === 'update') edit.diff = diffOfHunks(section.hunks);
    return edit;
  });
}

/** Hunks as a unified diff; a hunk's position in the file is not in the patch, so each starts at line 1. */
function diffOfHunks(hunks: readonly PatchLine[][]): string {
  const out: string[] = [];
  for (const body of hunks) {
    if (body.length === 0) continue;
    const before = body.filter((line) => line.kind !== '+').length;
    const after = body.filter((line) => line.kind !== '-').length;
    out.push(`@@ -1,${before} +1,${after} @@`, ...body.map((line) => `${line.kind}${line.text}`));
  }
  return out.length > 0 ? `${out.join('\n')}\n` : '';
}

/**
 * What Codex reported it applied: a `changes` map of path → change, in either of its shapes —
 * `{"add": {"content"}}` / `{"update": {"unified_diff", "move_path"}}` (events) or
 * `{"type": "update", "unified_diff", "move_path"}` (items).
 */
export function editsOfChanges(changes: unknown): FileEdit[] {
  if (!isObject(changes)) return [];
  const edits: FileEdit[] = [];
  for (const [path, change] of Object.entries(changes)) {
    if (!isObject(change)) continue;
    let kind = stringOf(change['type']);
    let body: JsonObject = change;
    if (kind === undefined) {
      const key = ['add', 'update', 'delete'].find((name) => name in change);
      if (key === undefined) continue;
      kind = key;
      body = isObject(change[key]) ? (change[key] as JsonObject) : {};
    }
    if (kind !== 'add' && kind !== 'update' && kind !== 'delete') continue;
    const edit: FileEdit = { path, kind };
    const content = stringOf(body['content']);
    if (content !== undefined) edit.content = content;
    const diff = stringOf(body['unified_diff']);
    if (diff !== undefined) edit.diff = diff;
    const movePath = stringOf(body['move_path']);
    if (movePath !== undefined) edit.movePath = movePath;
    edits.push(edit);
  }
  return edits;
}

/** A deleted file's diff from its removed text. */
export function deletionDiff(content: string): string {
  const lines = content.endsWith('\n') ? content.slice(0, -1).split('\n') : content.split('\n');
  if (content.length === 0) return '';
  return `@@ -1,${lines.length} +0,0 @@\n${lines.map((line) => `-${line}`).join('\n')}\n`;
}
