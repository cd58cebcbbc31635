import { Box, Text } from 'ink';
import { commandOf, fileEditOf, type ToolResultBlock, type ToolUseBlock } from '../../../conversation/index.js';
import { shortResult } from '../format.js';
import { renderInlineMarkdown, renderMarkdown } from '../render/markdown.js';
import { hardWrapLines, sanitize } from '../render/terminal-text.js';
import { commandRows, diffRows, fileEditSummary } from '../render/tool-output.js';

/** Rows of a diff or a command's output shown before the fold, with details off. */
export const FOLDED_ROWS = 12;
/** Rows of any other result shown with details on (a file read can be thousands). */
const EXPANDED_RESULT_ROWS = 40;

/** Tools whose results are file contents or listings, shown as they are: Markdown would read a `# comment` as a heading. */
const VERBATIM_TOOLS = new Set([
  'Read',
  'read_file',
  'read_many_files',
  'Grep',
  'grep',
  'search_file_content',
  'Glob',
  'glob',
  'LS',
  'ls',
  'list_directory',
  'list_files',
]);

/**
 * A tool's result under its call: an edit as a coloured diff, a shell command as a terminal block
 * (both folded unless details are on), anything else as one line (Markdown styled), or with
 * details on in full as Markdown.
 */
export function ToolResultView({
  block,
  toolUse,
  expanded,
  width,
}: {
  block: ToolResultBlock;
  toolUse: ToolUseBlock | undefined;
  expanded: boolean;
  width: number;
}) {
  const inner = Math.max(10, width - 4);
  const limit = expanded ? Number.POSITIVE_INFINITY : FOLDED_ROWS;
  const edit = toolUse && !block.isError ? fileEditOf(toolUse, block) : undefined;
  if (edit) {
    const { rows } = diffRows(edit, inner, limit);
    return <Rows head={fileEditSummary(edit)} rows={rows} />;
  }
  const command = toolUse ? commandOf(toolUse, block) : undefined;
  if (command) return <Rows head="" rows={commandRows(command, inner, limit).rows} />;
  if (expanded && block.content.trim() !== '') {
    const all =
      toolUse && VERBATIM_TOOLS.has(toolUse.name)
        ? hardWrapLines(sanitize(block.content.replace(/\n+$/, '')), inner)
        : renderMarkdown(block.content, inner);
    const rows =
      all.length > EXPANDED_RESULT_ROWS
        ? [...all.slice(0, EXPANDED_RESULT_ROWS - 1), `… ${all.length - EXPANDED_RESULT_ROWS + 1} more lines`]
        : all;
    return <Rows head="" rows={rows} color={block.isError ? 'red' : undefined} />;
  }
  return (
    <Text color={block.isError ? 'red' : 'gray'} wrap="truncate-end">
      {'  ⎿ '}
      {renderInlineMarkdown(shortResult(block.content, Math.max(20, width - 6)))}
    </Text>
  );
}

/** `  ⎿ head` then the rows, indented under it. */
function Rows({ head, rows, color }: { head: string; rows: readonly string[]; color?: string | undefined }) {
  const lines =
    head === ''
      ? rows.map((row, index) => `${index === 0 ? '  ⎿ ' : '    '}${row}`)
      : [`  ⎿ ${head}`, ...rows.map((row) => `    ${row}`)];
  return (
    <Box flexDirection="column">
      <Text {...(color ? { color } : {})}>{lines.join('\n')}</Text>
    </Box>
  );
}
