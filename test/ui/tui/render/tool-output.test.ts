import '../terminal-env.js';
import { describe, expect, it } from 'vitest';
import { commandOf, fileEditOf } from '../../../../src/conversation/index.js';
import { columns } from '../../../../src/ui/tui/render/terminal-text.js';
import { commandRows, diffRows, fileEditSummary } from '../../../../src/ui/tui/render/tool-output.js';
import { plain } from '../app-rig.js';

const GREEN = '\u001b[32m';
const RED = '\u001b[31m';

const edit = fileEditOf({
  name: 'Edit',
  input: {
    file_path: 'src/auth.ts',
    old_string: 'a\nb\nsameSite: "strict"\nc',
    new_string: 'a\nb\nsameSite: "lax"\nsecure: true\nc',
  },
})!;

describe('file edits in the terminal', () => {
  it('shows the diff with line numbers, + lines green and - lines red, context grey', () => {
    const { rows, hidden } = diffRows(edit, 60);
    expect(hidden).toBe(0);
    expect(rows.map(plain)).toEqual([
      '1   a',
      '2   b',
      '3 - sameSite: "strict"',
      '3 + sameSite: "lax"',
      '4 + secure: true',
      '5   c',
    ]);
    expect(rows[2]!.startsWith(RED)).toBe(true);
    expect(rows[3]!.startsWith(GREEN)).toBe(true);
    expect(rows[0]).toContain('\u001b[90m');
  });

  it('says what the edit did: updated with counts, or wrote a new file', () => {
    expect(plain(fileEditSummary(edit))).toBe('Updated src/auth.ts (+2 −1)');
    const written = fileEditOf({ name: 'Write', input: { file_path: 'notes.md', content: 'one\ntwo\n' } })!;
    expect(fileEditSummary(written)).toBe('Wrote notes.md (2 lines)');
  });

  it('folds a long diff to its first rows and says how many more there are', () => {
    const long = fileEditOf({
      name: 'Write',
      input: { file_path: 'big.txt', content: Array.from({ length: 50 }, (_, index) => `line ${index}`).join('\n') },
    })!;
    const folded = diffRows(long, 60, 12);
    expect(folded.rows).toHaveLength(12);
    expect(folded.hidden).toBe(39);
    expect(plain(folded.rows[11]!)).toBe('… 39 more lines · Ctrl+O shows them in full');
    expect(diffRows(long, 60).rows).toHaveLength(50);
  });

  it('separates hunks and wraps long lines under the gutter, within the width', () => {
    const before = Array.from({ length: 30 }, (_, index) => `line ${index}`);
    const after = [...before];
    after[2] = 'changed near the top';
    after[27] = `changed near the end with a line long enough to wrap ${'x'.repeat(40)}`;
    const view = fileEditOf({
      name: 'Edit',
      input: { file_path: 'f.txt', old_string: before.join('\n'), new_string: after.join('\n') },
    })!;
    const rows = diffRows(view, 40).rows;
    expect(rows.map(plain)).toContain('   ⋯');
    for (const row of rows) expect(columns(row)).toBeLessThanOrEqual(40);
    expect(rows.map(plain).some((row) => row.startsWith('     ') && row.includes('x'))).toBe(true);
  });
});

describe('shell commands in the terminal', () => {
  it('shows the command after $ and its output beside a bar', () => {
    const view = commandOf(
      { name: 'Bash', input: { command: 'npm test' } },
      { content: 'ok 1\nok 2', output: { exitCode: 0 }, isError: false },
    )!;
    expect(commandRows(view, 60).rows.map(plain)).toEqual(['$ npm test', '│ ok 1', '│ ok 2']);
  });

  it('shows a failure in red with its exit code', () => {
    const view = commandOf(
      { name: 'run_command', input: { command: 'false' } },
      { content: 'boom', output: { exitCode: 1 }, isError: true },
    )!;
    const { rows } = commandRows(view, 60);
    expect(rows.map(plain)).toEqual(['$ false', '│ boom', 'exit 1']);
    expect(rows[2]!.startsWith(RED)).toBe(true);
  });

  it('folds long output to its last rows, where a run says how it went', () => {
    const output = Array.from({ length: 100 }, (_, index) => `row ${index}`).join('\n');
    const view = commandOf({ name: 'Bash', input: { command: 'seq 100' } }, { content: output, isError: false })!;
    const { rows, hidden } = commandRows(view, 60, 12);
    expect(rows).toHaveLength(12);
    expect(hidden).toBe(90);
    expect(plain(rows[1]!)).toBe('│ … 90 more lines above · Ctrl+O shows them in full');
    expect(plain(rows.at(-1)!)).toBe('│ row 99');
  });

  it('strips escape sequences a command printed', () => {
    const view = commandOf(
      { name: 'Bash', input: { command: 'printf' } },
      { content: 'a\u001b]2;title\u0007b', isError: false },
    )!;
    const text = commandRows(view, 60).rows.join('\n');
    expect(text).not.toContain('\u001b]');
    expect(plain(text)).toContain('a]2;titleb');
  });
});
