import { describe, expect, it } from 'vitest';
import { editsOfPatch, parseCodexPatch, patchOfCommand } from '../../../src/backends/codex/codex-patch.js';

/** The one reader of Codex's patch format, for the import and for live turns alike. */
describe('Codex patches', () => {
  const patch = [
    '*** Begin Patch',
    '*** Add File: new.txt',
    '+first',
    '+second',
    '*** Update File: old.txt',
    '*** Move to: renamed.txt',
    '@@ function main',
    ' keep',
    '',
    '-gone',
    '+here',
    '*** End of File',
    '*** Delete File: dead.txt',
    '*** End Patch',
    '',
  ].join('\n');

  it('reads sections, moves and hunks; an unmarked line in a hunk is context; nothing after End Patch', () => {
    expect(parseCodexPatch(patch)).toEqual([
      {
        kind: 'add',
        path: 'new.txt',
        hunks: [
          [
            { kind: '+', text: 'first' },
            { kind: '+', text: 'second' },
          ],
        ],
      },
      {
        kind: 'update',
        path: 'old.txt',
        movedTo: 'renamed.txt',
        hunks: [
          [
            { kind: ' ', text: 'keep' },
            { kind: ' ', text: '' },
            { kind: '-', text: 'gone' },
            { kind: '+', text: 'here' },
          ],
        ],
      },
      { kind: 'delete', path: 'dead.txt', hunks: [] },
    ]);
  });

  it('shows them as edits: an add’s content, an update’s diff, counted without the line after End Patch', () => {
    expect(editsOfPatch(patch)).toEqual([
      { path: 'new.txt', kind: 'add', content: 'first\nsecond\n' },
      {
        path: 'old.txt',
        kind: 'update',
        movePath: 'renamed.txt',
        diff: '@@ -1,3 +1,3 @@\n keep\n \n-gone\n+here\n',
      },
      { path: 'dead.txt', kind: 'delete' },
    ]);
  });

  it('finds the patch in an apply_patch heredoc, and nothing in another command', () => {
    expect(patchOfCommand(`apply_patch <<'EOF'\n${patch}EOF`)).toBe(
      patch.slice(0, patch.lastIndexOf('*** End Patch') + 13),
    );
    expect(patchOfCommand('echo "*** Begin Patch"')).toBeUndefined();
  });
});
