import type { CommandView, FileEditView } from '../../../conversation/index.js';
import { h } from '../dom.js';

/**
 * A file edit as a unified diff (hunk headers, added and removed lines coloured) and a shell
 * command as a terminal block (the command, its output, its exit code), read from the tool call
 * by `fileEditOf` / `commandOf` in conversation/, as the TUI and the ACP agent read them.
 */

const DIFF_CLASS = { '+': 'diff-add', '-': 'diff-del', ' ': 'diff-context' } as const;

export function fileEditElement(edit: FileEditView): HTMLElement {
  const stats = h(
    'span',
    { class: 'diff-stats' },
    h('span', { class: 'diff-added' }, `+${edit.added}`),
    ' ',
    h('span', { class: 'diff-removed' }, `−${edit.removed}`),
  );
  const hunks = edit.hunks.flatMap((hunk) => [
    h('div', { class: 'diff-hunk' }, `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`),
    ...hunk.lines.map((line) =>
      h(
        'div',
        { class: `diff-line ${DIFF_CLASS[line.kind]}` },
        h('span', { class: 'diff-sign', 'aria-hidden': 'true' }, line.kind),
        line.text,
      ),
    ),
  ]);
  return h(
    'div',
    { class: 'file-edit', 'data-testid': 'file-edit' },
    h(
      'div',
      { class: 'file-edit-head' },
      h('span', { class: 'file-edit-kind' }, edit.kind === 'write' ? 'Write' : 'Edit'),
      ' ',
      h('code', {}, edit.path),
      ' ',
      stats,
    ),
    hunks.length > 0
      ? h('div', { class: 'diff', role: 'figure', 'aria-label': `Changes to ${edit.path}` }, hunks)
      : h('div', { class: 'muted small' }, 'No changes.'),
  );
}

export function commandElement(command: CommandView): HTMLElement {
  const failed = command.isError === true || (command.exitCode !== undefined && command.exitCode !== 0);
  return h(
    'div',
    { class: `terminal${failed ? ' failed' : ''}`, 'data-testid': 'terminal' },
    command.cwd ? h('div', { class: 'terminal-cwd' }, command.cwd) : null,
    h(
      'div',
      { class: 'terminal-command' },
      h('span', { class: 'terminal-prompt', 'aria-hidden': 'true' }, '$ '),
      command.command,
    ),
    command.output !== undefined
      ? h('pre', { class: 'terminal-output' }, command.output || '(no output)')
      : h('div', { class: 'terminal-running muted' }, 'running…'),
    command.exitCode !== undefined ? h('div', { class: 'terminal-exit' }, `exit ${command.exitCode}`) : null,
  );
}
