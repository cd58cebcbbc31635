import { closeSync, openSync, readSync, fstatSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { createTwoFilesPatch } from 'diff';
import { parseCodexPatch, type PatchSection } from './codex-patch.js';

/**
 * `codex exec`'s `file_change` item names the files a patch changed and how, never the change
 * itself (the app server's does carry Codex's diff). The change is in the `apply_patch` call Codex
 * recorded in its rollout just before it applied the patch (read by `parseCodexPatch`).
 * A diff is built from the file as it is after the change and that patch undone on it (the file
 * before), so it carries real line numbers. When the patch cannot be found or does not fit the
 * file, there is no diff, and the change is shown by path and kind.
 */

/**
 * A unified diff of one changed file: the file's text now (`after`, undefined when deleted) and the
 * patch section that made it. Undefined when the section does not fit the file.
 */
export function diffOfChange(path: string, section: PatchSection, after: string | undefined): string | undefined {
  if (section.kind === 'delete') return undefined;
  if (after === undefined) return undefined;
  let before: string;
  if (section.kind === 'add') before = '';
  else {
    const undone = undoHunks(after, section.hunks);
    if (undone === undefined) return undefined;
    before = undone;
  }
  if (before === after) return undefined;
  return createTwoFilesPatch(path, path, before, after, undefined, undefined, { context: 3 });
}

/** The file before the hunks were applied: each hunk's new lines, found in order, put back as its old lines. */
function undoHunks(after: string, hunks: PatchSection['hunks']): string | undefined {
  const endsWithNewline = after.endsWith('\n');
  const lines = (endsWithNewline ? after.slice(0, -1) : after).split('\n');
  let cursor = 0;
  for (const hunk of hunks) {
    const newLines = hunk.filter((line) => line.kind !== '-').map((line) => line.text);
    const oldLines = hunk.filter((line) => line.kind !== '+').map((line) => line.text);
    const at = findSequence(lines, newLines, cursor);
    if (at === undefined) return undefined;
    lines.splice(at, newLines.length, ...oldLines);
    cursor = at + oldLines.length;
  }
  return `${lines.join('\n')}${endsWithNewline ? '\n' : ''}`;
}

function findSequence(lines: readonly string[], sequence: readonly string[], from: number): number | undefined {
  if (sequence.length === 0) return from <= lines.length ? from : undefined;
  for (let start = from; start + sequence.length <= lines.length; start++) {
    let matches = true;
    for (let index = 0; index < sequence.length && matches; index++)
      matches = lines[start + index]!.trimEnd() === sequence[index]!.trimEnd();
    if (matches) return start;
  }
  return undefined;
}

/** How much of a rollout's end is read for the last patch: a patch is recorded just before it is applied. */
const ROLLOUT_TAIL_BYTES = 1024 * 1024;

/**
 * The `apply_patch` inputs recorded in the last part of a rollout, newest first (the freeform
 * `custom_tool_call` and the older `function_call` with `{input}` alike).
 */
export function recentPatches(rolloutPath: string): string[] {
  let text: string;
  try {
    const descriptor = openSync(rolloutPath, 'r');
    try {
      const size = fstatSync(descriptor).size;
      const length = Math.min(size, ROLLOUT_TAIL_BYTES);
      const buffer = Buffer.alloc(length);
      readSync(descriptor, buffer, 0, length, size - length);
      text = buffer.toString('utf8');
    } finally {
      closeSync(descriptor);
    }
  } catch {
    return [];
  }
  const patches: string[] = [];
  const lines = text.split('\n');
  for (let index = lines.length - 1; index >= 0; index--) {
    const line = lines[index]!;
    if (!line.includes('apply_patch')) continue;
    try {
      const payload = (JSON.parse(line) as { payload?: Record<string, unknown> }).payload;
      if (payload?.['name'] !== 'apply_patch') continue;
      if (payload['type'] === 'custom_tool_call' && typeof payload['input'] === 'string')
        patches.push(payload['input']);
      else if (payload['type'] === 'function_call' && typeof payload['arguments'] === 'string') {
        const input = (JSON.parse(payload['arguments']) as { input?: unknown }).input;
        if (typeof input === 'string') patches.push(input);
      }
    } catch {
      // The first line of the tail is usually cut; a torn line is skipped.
    }
  }
  return patches;
}

/** The section of `patches` (newest first) that changed `path` (absolute), resolving the patch's paths from `cwd`. */
export function sectionFor(patches: readonly string[], path: string, cwd: string): PatchSection | undefined {
  for (const patch of patches)
    for (const section of parseCodexPatch(patch)) {
      const target = section.movedTo ?? section.path;
      if (resolve(cwd, target) === path || (!isAbsolute(path) && target === path)) return section;
      if (resolve(cwd, section.path) === path) return section;
    }
  return undefined;
}
