import { beforeAll, describe, expect, it } from 'vitest';
import { TokenCounter, loadTokenizer, type ConversationBlock } from '../../src/conversation/index.js';
import { renderCheckpoint } from '../../src/sessions/index.js';
import { buildStructuralSummary, clipText, pathsOf } from '../../src/sessions/structural-summarizer.js';
import type { CheckpointSummary } from '../../src/store/index.js';
import { prose } from './compaction-helpers.js';

const counter = new TokenCounter();
const countText = (text: string) => counter.countText(text);

beforeAll(async () => {
  await loadTokenizer();
});

/** A realistic turn sequence: requests, Claude Code and Gemini CLI tool calls, a failed edit, an error notice, workers. */
function history(): ConversationBlock[] {
  let seq = 0;
  let at = 1_700_000_000_000;
  const stamp = <T extends object>(block: T) => ({ ...block, seq: seq++, createdAt: at++ });
  return [
    stamp({
      id: 'u1',
      type: 'user_message',
      content: 'Add a --verbose flag to the CLI.\n\nKeep it a boolean.',
      pinned: true,
    }),
    stamp({
      id: 't1',
      type: 'tool_use',
      toolUseId: 'c1',
      name: 'Read',
      input: { file_path: 'src/cli/args.ts' },
      status: 'success',
    }),
    stamp({ id: 'r1', type: 'tool_result', toolUseId: 'c1', content: 'export function parse() {}', isError: false }),
    stamp({
      id: 't2',
      type: 'tool_use',
      toolUseId: 'c2',
      name: 'Edit',
      input: { file_path: 'src/cli/args.ts', old_string: 'a', new_string: 'b' },
      status: 'success',
    }),
    stamp({ id: 'r2', type: 'tool_result', toolUseId: 'c2', content: 'String not found in file.', isError: true }),
    stamp({
      id: 't3',
      type: 'tool_use',
      toolUseId: 'c3',
      name: 'Edit',
      input: { file_path: 'src/cli/args.ts', old_string: 'x', new_string: 'y' },
      status: 'success',
    }),
    stamp({ id: 'r3', type: 'tool_result', toolUseId: 'c3', content: 'ok', isError: false }),
    stamp({
      id: 't4',
      type: 'tool_use',
      toolUseId: 'c4',
      name: 'Bash',
      input: { command: 'npm test -- args' },
      status: 'success',
    }),
    stamp({ id: 'r4', type: 'tool_result', toolUseId: 'c4', content: '12 passed', isError: false }),
    stamp({ id: 'a1', type: 'assistant_text', content: 'The flag is parsed in src/cli/args.ts and the tests pass.' }),
    stamp({ id: 'u2', type: 'user_message', content: 'Now document it in README.md and docs/cli.md.' }),
    stamp({
      id: 't5',
      type: 'tool_use',
      toolUseId: 'c5',
      name: 'read_many_files',
      input: { paths: ['README.md', 'docs/cli.md'] },
      status: 'success',
    }),
    stamp({ id: 'r5', type: 'tool_result', toolUseId: 'c5', content: '# Parley', isError: false }),
    stamp({
      id: 't6',
      type: 'tool_use',
      toolUseId: 'c6',
      name: 'replace',
      input: { file_path: 'README.md', old_string: '', new_string: '--verbose' },
      status: 'success',
    }),
    stamp({ id: 'r6', type: 'tool_result', toolUseId: 'c6', content: 'ok', isError: false }),
    stamp({
      id: 's1',
      type: 'system',
      subtype: 'error',
      content: 'The anthropic-api back end failed: 529 overloaded.',
    }),
    stamp({
      id: 'w1',
      type: 'subagent',
      subagentId: 'agent-7',
      name: 'linter',
      input: 'lint',
      status: 'success',
      output: 'No lint errors.',
    }),
    stamp({
      id: 'w2',
      type: 'subagent',
      subagentId: 'agent-8',
      name: 'docs-check',
      input: 'check links',
      status: 'error',
      output: 'Broken link: docs/cli.md#flags',
    }),
    stamp({
      id: 't7',
      type: 'tool_use',
      toolUseId: 'c7',
      name: 'write_file',
      input: { file_path: 'docs/cli.md', content: '...' },
      status: 'running',
    }),
    stamp({ id: 'a2', type: 'assistant_text', content: 'README.md documents the flag; docs/cli.md is next.' }),
  ] as ConversationBlock[];
}

describe('buildStructuralSummary', () => {
  it('lists requests, files touched with their tools, other tools, workers, errors, interrupted calls and the last answers', () => {
    const summary = buildStructuralSummary({ blocks: history(), countText, maxTokens: 2_000 });
    expect(summary.pending).toEqual([
      'User asked: Add a --verbose flag to the CLI. Keep it a boolean.',
      'User asked: Now document it in README.md and docs/cli.md.',
    ]);
    expect(summary.completed).toEqual([
      'File `src/cli/args.ts`: Read ×1, Edit ×2',
      'File `README.md`: read_many_files ×1, replace ×1',
      'File `docs/cli.md`: read_many_files ×1, write_file ×1',
      'Tool `Bash` ×1 (last: npm test -- args)',
      'Worker `linter` (agent-7) finished: No lint errors.',
      'Assistant answered: The flag is parsed in src/cli/args.ts and the tests pass.',
      'Assistant answered: README.md documents the flag; docs/cli.md is next.',
    ]);
    expect(summary.blockers).toEqual([
      '`Edit` (src/cli/args.ts) failed: String not found in file.',
      'Error: The anthropic-api back end failed: 529 overloaded.',
      'Worker `docs-check` (agent-8) failed: Broken link: docs/cli.md#flags',
    ]);
    expect(summary.inProgress).toEqual(['`write_file` (docs/cli.md) did not return before its turn ended']);
    expect(summary.decisions).toEqual([]);
  });

  it('does not repeat requests the checkpoint keeps verbatim, and takes in those the previous checkpoint kept verbatim', () => {
    const summary = buildStructuralSummary({
      blocks: history(),
      verbatim: ['Add a --verbose flag to the CLI.\n\nKeep it a boolean.'],
      previousRequests: ['Set up the project.'],
      countText,
      maxTokens: 2_000,
    });
    expect(summary.pending).toEqual([
      'User asked: Set up the project.',
      'User asked: Now document it in README.md and docs/cli.md.',
    ]);
  });

  it('keeps the previous checkpoint, merging what the same files and tools did', () => {
    const previous: CheckpointSummary = {
      completed: [
        'Set up the repository',
        'File `src/cli/args.ts`: Write ×1, Edit ×1',
        'Tool `Bash` ×4 (last: npm ci)',
      ],
      inProgress: [],
      pending: ['User asked: Set up the project.'],
      decisions: ['Use zod for validation (the user asked for it)'],
      blockers: [],
    };
    const summary = buildStructuralSummary({ blocks: history(), previous, countText, maxTokens: 2_000 });
    expect(summary.decisions).toEqual(['Use zod for validation (the user asked for it)']);
    expect(summary.pending[0]).toBe('User asked: Set up the project.');
    expect(summary.completed[0]).toBe('Set up the repository');
    expect(summary.completed).toContain('File `src/cli/args.ts`: Write ×1, Edit ×3, Read ×1');
    expect(summary.completed).toContain('Tool `Bash` ×5 (last: npm test -- args)');
    expect(summary.completed.filter((item) => item.includes('src/cli/args.ts`'))).toHaveLength(1);
  });

  it('is deterministic', () => {
    const first = buildStructuralSummary({ blocks: history(), countText, maxTokens: 300 });
    const second = buildStructuralSummary({ blocks: history(), countText, maxTokens: 300 });
    expect(second).toEqual(first);
  });

  it('stays within its allowance on a long history: the oldest give way, and a line says how many', () => {
    const blocks: ConversationBlock[] = [];
    for (let index = 0; index < 400; index++) {
      const at = 1_700_000_000_000 + index;
      blocks.push({
        id: `u${index}`,
        seq: index * 4,
        type: 'user_message',
        content: `Request ${index}: ${prose(120, index + 1)}`,
        createdAt: at,
      });
      blocks.push({
        id: `t${index}`,
        seq: index * 4 + 1,
        type: 'tool_use',
        toolUseId: `c${index}`,
        name: 'Edit',
        input: { file_path: `src/module-${index}.ts` },
        status: 'success',
        createdAt: at,
      });
      blocks.push({
        id: `r${index}`,
        seq: index * 4 + 2,
        type: 'tool_result',
        toolUseId: `c${index}`,
        content: index % 7 === 0 ? `failed: ${prose(80, index)}` : 'ok',
        isError: index % 7 === 0,
        createdAt: at,
      });
      blocks.push({
        id: `a${index}`,
        seq: index * 4 + 3,
        type: 'assistant_text',
        content: `Done ${index}: ${prose(150, index + 9)}`,
        createdAt: at,
      });
    }
    const fullText = blocks.map((block) => ('content' in block ? block.content : '')).join('\n');
    for (const maxTokens of [150, 800, 8_000]) {
      const summary = buildStructuralSummary({ blocks, countText, maxTokens });
      const itemTokens = Object.values(summary)
        .flat()
        .reduce((sum, item) => sum + countText(item) + 2, 0);
      expect(itemTokens).toBeLessThanOrEqual(maxTokens);
      expect(summary.pending[0]).toMatch(/^\(\d+ earlier requests left out; the session log keeps them\)$/);
      // The newest survive.
      expect(summary.pending[summary.pending.length - 1]).toContain('Request 399:');
      expect(countText(renderCheckpoint({ summary, pinned: [], liveHandles: [] }))).toBeLessThan(
        countText(fullText) / 10,
      );
    }
  });

  it('adds up what earlier checkpoints left out instead of repeating the line', () => {
    const previous: CheckpointSummary = {
      completed: [],
      inProgress: [],
      pending: ['(12 earlier requests left out; the session log keeps them)', 'User asked: Old request.'],
      decisions: [],
      blockers: [],
    };
    const blocks: ConversationBlock[] = Array.from({ length: 30 }, (_, index) => ({
      id: `u${index}`,
      seq: index,
      type: 'user_message' as const,
      content: `Request ${index}: ${prose(60, index)}`,
      createdAt: 1_700_000_000_000 + index,
    }));
    const summary = buildStructuralSummary({ blocks, previous, countText, maxTokens: 400 });
    const marker = /^\((\d+) earlier requests left out/.exec(summary.pending[0]!);
    expect(marker).not.toBeNull();
    // 12 from before, the old request, and the new ones that did not fit.
    expect(Number(marker![1])).toBe(12 + 1 + 30 - (summary.pending.length - 1));
    expect(summary.pending.filter((item) => item.includes('left out'))).toHaveLength(1);
  });

  it('trims long requests and answers, keeping their head', () => {
    const long = `Please refactor the store. ${prose(2_000, 3)}`;
    const summary = buildStructuralSummary({
      blocks: [
        { id: 'u', seq: 0, type: 'user_message', content: long, createdAt: 1 },
        { id: 'a', seq: 1, type: 'assistant_text', content: `Refactored. ${prose(2_000, 4)}`, createdAt: 2 },
      ],
      countText,
      maxTokens: 5_000,
    });
    expect(summary.pending[0]).toMatch(/^User asked: Please refactor the store\. .* \[…\]$/);
    expect(countText(summary.pending[0]!)).toBeLessThanOrEqual(210);
    expect(summary.completed[0]).toMatch(/^Assistant answered: Refactored\. .* \[…\]$/);
    expect(countText(summary.completed[0]!)).toBeLessThanOrEqual(90);
  });
});

describe('pathsOf and clipText', () => {
  it('reads file_path, path, paths and the like, each once; ignores non-strings and multi-line values', () => {
    expect(pathsOf({ file_path: 'a.ts', path: 'a.ts', paths: ['b.ts', 3, 'c.ts'], notebook_path: 'n.ipynb' })).toEqual([
      'a.ts',
      'b.ts',
      'c.ts',
      'n.ipynb',
    ]);
    expect(pathsOf({ content: 'x', path: 'line one\nline two' })).toEqual([]);
    expect(pathsOf('src/a.ts')).toEqual([]);
    expect(pathsOf(null)).toEqual([]);
  });

  it('keeps short text whole and cuts long text within the limit', () => {
    expect(clipText('short', 10, countText)).toBe('short');
    const clipped = clipText(prose(500, 2), 40, countText);
    expect(countText(clipped)).toBeLessThanOrEqual(40);
    expect(clipped.endsWith(' […]')).toBe(true);
  });
});
