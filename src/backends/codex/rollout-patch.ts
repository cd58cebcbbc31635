import { isObject, stringOf, type JsonObject } from '../transcripts/json.js';

/**
 * Codex's file edits as Parley shows them. The model writes a patch in Codex's own format
 * (`*** Begin Patch`, `*** Add File: p`, `*** Update File: p` with `@@` hunks, `*** Delete File: p`,
 * `*** Move to: q`), through the `apply_patch` tool or an `apply_patch <<'EOF'` shell command; Codex
 * reports what it applied per path (`patch_apply_begin`/`_end`, or a `FileChange` item), with a
 * unified diff for an update. That report is preferred: it is the change that happened.
 */

/** One file a patch touched. */
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
const FILE_HEADER = /^\*\*\* (Add|Update|Delete) File: (.+)$/;
const MOVE = /^\*\*\* Move to: (.+)$/;

/** The patch text of an `apply_patch <<'EOF' … EOF` shell command (or the command itself when it is a patch), else undefined. */
export function patchOfCommand(command: string): string | undefined {
  const start = command.indexOf(BEGIN);
  if (start === -1 || !/(^|\s)apply_patch\b/.test(command.slice(0, start) || 'apply_patch')) return undefined;
  const end = command.indexOf('*** End Patch', start);
  return end === -1 ? command.slice(start) : command.slice(start, end + '*** End Patch'.length);
}

/** The files of a Codex patch, with a unified diff built from each update's hunks (line numbers counted from the hunk's own start). */
export function editsOfPatch(patch: string): FileEdit[] {
  const edits: FileEdit[] = [];
  let current: { edit: FileEdit; lines: string[] } | undefined;
  const close = (): void => {
    if (current === undefined) return;
    const { edit, lines } = current;
    if (edit.kind === 'add') edit.content = lines.map((line) => line.slice(1)).join('\n') + (lines.length ? '\n' : '');
    else if (edit.kind === 'update') edit.diff = diffOfHunks(lines);
    edits.push(edit);
    current = undefined;
  };
  for (const line of patch.split('\n')) {
    const header = FILE_HEADER.exec(line);
    if (header !== null) {
      close();
      const kind = header[1] === 'Add' ? 'add' : header[1] === 'Update' ? 'update' : 'delete';
      current = { edit: { path: header[2]!.trim(), kind }, lines: [] };
      continue;
    }
    if (current === undefined || line.startsWith('*** End Patch') || line.startsWith(BEGIN)) continue;
    const move = MOVE.exec(line);
    if (move !== null) current.edit.movePath = move[1]!.trim();
    else if (line !== '*** End of File') current.lines.push(line);
  }
  close();
  return edits;
}

/** Codex's `@@ <context>` hunks → a unified diff; a hunk's position in the file is not in the patch, so each starts at line 1. */
function diffOfHunks(lines: string[]): string {
  const hunks: string[][] = [];
  let hunk: string[] | undefined;
  for (const line of lines) {
    if (line.startsWith('@@')) {
      hunk = [];
      hunks.push(hunk);
      continue;
    }
    if (hunk === undefined) {
      hunk = [];
      hunks.push(hunk);
    }
    const kind = line[0];
    hunk.push(kind === '+' || kind === '-' || kind === ' ' ? line : ` ${line}`);
  }
  const out: string[] = [];
  for (const body of hunks) {
    if (body.length === 0) continue;
    const before = body.filter((line) => line[0] !== '+').length;
    const after = body.filter((line) => line[0] !== '-').length;
    out.push(`@@ -1,${before} +1,${after} @@`, ...body);
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
