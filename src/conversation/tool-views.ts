import { structuredPatch } from 'diff';
import type { ToolResultBlock, ToolUseBlock } from './blocks.js';

/**
 * How the UIs show the tools people read differently from JSON: a file edit as a unified diff, a
 * shell command as a terminal block. Both UIs (and the ACP agent's `diff` content) read these, so
 * an edit looks the same wherever it is shown. The tools are Claude Code's (`Edit`, `MultiEdit`,
 * `Write`, `Bash`), the Gemini CLI's (`replace`, `write_file`, `run_shell_command`) and Parley's own
 * workspace tools (`edit_file`, `write_file`, `run_command`), whose results carry the diff they
 * made in `output.diff` (preferred: it is the change that happened, not the one that was asked for).
 */

/** One hunk line: `+` added, `-` removed, ` ` context. */
export interface DiffLine {
  kind: '+' | '-' | ' ';
  text: string;
  /** The file's last line, with no newline after it (the diff's `\ No newline at end of file` followed it). */
  noNewline?: boolean;
}

/** One hunk of a unified diff, with its lines. */
export interface DiffHunk {
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  lines: DiffLine[];
}

/** A file edit as the UIs draw it: the path, whether it wrote or edited, its hunks and line counts. */
export interface FileEditView {
  path: string;
  /** `write` replaces or creates the whole file; `edit` changes part of it. */
  kind: 'edit' | 'write';
  hunks: DiffHunk[];
  added: number;
  removed: number;
}

/** A command run by a tool as the UIs draw it: the command, its folder and its output. */
export interface CommandView {
  command: string;
  cwd?: string;
  /** The result's text (the command's captured output), when the result has arrived. */
  output?: string;
  exitCode?: number;
  isError?: boolean;
}

/** Parley's workspace tools put this in a file tool's `tool_result.output`. */
export interface FileEditOutput {
  path: string;
  /** A unified diff (`--- a`/`+++ b` headers optional). */
  diff: string;
}

const EDIT_TOOLS = new Set(['Edit', 'MultiEdit', 'replace', 'edit_file']);
const WRITE_TOOLS = new Set(['Write', 'write_file']);
const COMMAND_TOOLS = new Set(['Bash', 'run_shell_command', 'run_command', 'shell']);

/** The edit a tool call makes, or undefined when the tool does not edit files. */
export function fileEditOf(
  toolUse: Pick<ToolUseBlock, 'name' | 'input'>,
  result?: Pick<ToolResultBlock, 'output' | 'isError'>,
): FileEditView | undefined {
  const isEdit = EDIT_TOOLS.has(toolUse.name);
  if (!isEdit && !WRITE_TOOLS.has(toolUse.name)) return undefined;
  const input = asRecord(toolUse.input);
  const path = stringField(input, 'file_path') ?? stringField(input, 'path') ?? stringField(input, 'absolute_path');
  const kind = isEdit ? 'edit' : 'write';
  const made = result && !result.isError ? asRecord(result.output) : {};
  const madeDiff = stringField(made, 'diff');
  if (madeDiff !== undefined)
    return viewOfPatch(stringField(made, 'path') ?? path ?? '', kind, parseUnifiedDiff(madeDiff));
  if (path === undefined) return undefined;
  if (toolUse.name === 'MultiEdit') {
    const edits = Array.isArray(input.edits) ? input.edits.map(asRecord) : [];
    const hunks = edits.flatMap((edit) =>
      hunksBetween(stringField(edit, 'old_string') ?? '', stringField(edit, 'new_string') ?? ''),
    );
    return viewOfPatch(path, kind, hunks);
  }
  if (isEdit) {
    const before = stringField(input, 'old_string') ?? stringField(input, 'old_text');
    const after = stringField(input, 'new_string') ?? stringField(input, 'new_text');
    if (before === undefined || after === undefined) return undefined;
    return viewOfPatch(path, kind, hunksBetween(before, after));
  }
  const content = stringField(input, 'content');
  if (content === undefined) return undefined;
  return viewOfPatch(path, kind, hunksBetween('', content));
}

/** The command a shell tool runs (with its output once the result is in), or undefined. */
export function commandOf(
  toolUse: Pick<ToolUseBlock, 'name' | 'input'>,
  result?: Pick<ToolResultBlock, 'content' | 'output' | 'isError'>,
): CommandView | undefined {
  if (!COMMAND_TOOLS.has(toolUse.name)) return undefined;
  const input = asRecord(toolUse.input);
  const command = stringField(input, 'command') ?? stringField(input, 'cmd');
  if (command === undefined) return undefined;
  const view: CommandView = { command };
  const cwd = stringField(input, 'cwd') ?? stringField(input, 'directory') ?? stringField(input, 'dir_path');
  if (cwd !== undefined) view.cwd = cwd;
  if (result) {
    view.output = result.content;
    view.isError = result.isError;
    const exitCode = asRecord(result.output).exitCode;
    if (typeof exitCode === 'number') view.exitCode = exitCode;
  }
  return view;
}

/** Hunks of a unified diff (file headers and `Index:` lines are skipped). */
export function parseUnifiedDiff(diff: string): DiffHunk[] {
  const hunks: DiffHunk[] = [];
  let current: DiffHunk | undefined;
  for (const line of diff.split('\n')) {
    const header = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(line);
    if (header) {
      current = {
        oldStart: Number(header[1]),
        oldLines: Number(header[2] ?? 1),
        newStart: Number(header[3]),
        newLines: Number(header[4] ?? 1),
        lines: [],
      };
      hunks.push(current);
      continue;
    }
    if (!current) continue;
    const kind = line[0];
    if (kind === '+' || kind === '-' || kind === ' ') current.lines.push({ kind, text: line.slice(1) });
    else if (kind === '\\') {
      const last = current.lines.at(-1);
      if (last) last.noNewline = true;
    }
  }
  return hunks;
}

function hunksBetween(before: string, after: string): DiffHunk[] {
  const patch = structuredPatch('a', 'b', withNewline(before), withNewline(after), undefined, undefined, {
    context: 3,
  });
  const hunks: DiffHunk[] = patch.hunks.map((hunk) => ({
    oldStart: hunk.oldStart,
    oldLines: hunk.oldLines,
    newStart: hunk.newStart,
    newLines: hunk.newLines,
    lines: hunk.lines
      .filter((line) => line[0] === '+' || line[0] === '-' || line[0] === ' ')
      .map((line) => ({ kind: line[0] as DiffLine['kind'], text: line.slice(1) })),
  }));
  // The newline added for the diff is not the text's: a side that lacked one says so on its last line.
  const lines = hunks.at(-1)?.lines ?? [];
  const lastOf = (side: DiffLine['kind']): DiffLine | undefined => lines.findLast((line) => line.kind !== side);
  if (before !== '' && !before.endsWith('\n')) {
    const last = lastOf('+');
    if (last) last.noNewline = true;
  }
  if (after !== '' && !after.endsWith('\n')) {
    const last = lastOf('-');
    if (last) last.noNewline = true;
  }
  return hunks;
}

function viewOfPatch(path: string, kind: FileEditView['kind'], hunks: DiffHunk[]): FileEditView {
  let added = 0;
  let removed = 0;
  for (const hunk of hunks) {
    for (const line of hunk.lines) {
      if (line.kind === '+') added += 1;
      else if (line.kind === '-') removed += 1;
    }
  }
  return { path, kind, hunks, added, removed };
}

/** Without it, the diff of a last line lacking its newline carries a `\ No newline` marker. */
function withNewline(text: string): string {
  return text === '' || text.endsWith('\n') ? text : `${text}\n`;
}

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function stringField(record: Record<string, unknown>, key: string): string | undefined {
  const value = record[key];
  return typeof value === 'string' ? value : undefined;
}
