import { Box, Text } from 'ink';
import { memo } from 'react';
import {
  commandOf,
  fileEditOf,
  type BlockStatus,
  type ConversationBlock,
  type SubagentBlock,
  type SystemBlock,
  type ToolUseBlock,
} from '../../../conversation/index.js';
import { describeInput, formatCost, formatCount, formatDuration, oneLine, shortResult, wordCount } from '../format.js';
import { renderInlineMarkdown, renderMarkdown } from '../render/markdown.js';
import { renderStreamingMarkdown } from '../render/markdown-stream.js';
import { columns as stringColumns, prefixLines } from '../render/terminal-text.js';
import type { HistoryItem, NoteLine, Tone } from '../view-state.js';
import { ToolResultView } from './tool-result-view.js';

export const TONE_COLOR: Record<Tone, string | undefined> = {
  info: undefined,
  success: 'green',
  warning: 'yellow',
  error: 'red',
  dim: 'gray',
  accent: 'cyan',
};

const STATUS: Record<BlockStatus, { glyph: string; color: string }> = {
  pending: { glyph: '○', color: 'gray' },
  running: { glyph: '●', color: 'yellow' },
  success: { glyph: '✓', color: 'green' },
  error: { glyph: '✗', color: 'red' },
};

export const SPINNER_FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

export function spinnerFrame(now: number): string {
  return SPINNER_FRAMES[Math.floor(now / 100) % SPINNER_FRAMES.length]!;
}

export function NoteLines({ lines }: { lines: readonly NoteLine[] }) {
  return (
    <Box flexDirection="column">
      {lines.map((line, index) => (
        <Text
          key={index}
          {...(line.tone && TONE_COLOR[line.tone] ? { color: TONE_COLOR[line.tone] } : {})}
          bold={line.bold ?? false}
        >
          {line.text}
        </Text>
      ))}
    </Box>
  );
}

/** One finished item of the history. Rendered once, into `<Static>`: it never re-renders. */
export const HistoryItemView = memo(function HistoryItemView({ item, width }: { item: HistoryItem; width: number }) {
  switch (item.kind) {
    case 'banner':
      return (
        <Box flexDirection="column">
          <NoteLines lines={item.lines} />
        </Box>
      );
    case 'note':
      return (
        <Box flexDirection="column" marginTop={1}>
          <NoteLines lines={item.lines} />
        </Box>
      );
    case 'block':
      return (
        <FinishedBlock
          block={item.block}
          thread={item.thread}
          threadCost={item.threadCost}
          toolUse={item.toolUse}
          expanded={item.expanded}
          width={width}
        />
      );
  }
});

interface BlockProps {
  block: ConversationBlock;
  thread?: readonly ConversationBlock[] | undefined;
  threadCost?: number | undefined;
  toolUse?: ToolUseBlock | undefined;
  expanded: boolean;
  width: number;
}

/** A block once it is complete: in full (its text is in the scrollback), thinking and threads collapsed unless details are on. */
function FinishedBlock({ block, thread, threadCost, toolUse, expanded, width }: BlockProps) {
  switch (block.type) {
    case 'user_message':
      return (
        <Box marginTop={1}>
          <Text color="cyan" bold>
            ❯{' '}
          </Text>
          <Text bold>{renderMarkdown(block.content, width - 2).join('\n')}</Text>
        </Box>
      );
    case 'assistant_text':
      return (
        <Box marginTop={1}>
          <Text>{renderMarkdown(block.content, width).join('\n')}</Text>
        </Box>
      );
    case 'thinking':
      return (
        <ThinkingLine block={block} expanded={expanded} live={false} width={width} maxRows={Number.POSITIVE_INFINITY} />
      );
    case 'tool_use':
      return <ToolLine block={block} width={width} spinner="" />;
    case 'tool_result':
      return <ToolResultView block={block} toolUse={toolUse} expanded={expanded} width={width} />;
    case 'system':
      return <SystemLine block={block} />;
    case 'subagent':
      return (
        <WorkerThread
          block={block}
          thread={thread ?? []}
          cost={threadCost}
          expanded={expanded}
          width={width}
          now={block.completedAt ?? Date.now()}
          spinner=""
          maxRows={expanded ? 40 : 2}
        />
      );
  }
}

export function ThinkingLine({
  block,
  expanded,
  live,
  width,
  maxRows,
}: {
  block: ConversationBlock & { type: 'thinking' };
  expanded: boolean;
  live: boolean;
  width: number;
  maxRows: number;
}) {
  const words = wordCount(block.content);
  const summary = block.redacted ? 'hidden by the model' : `${words} ${words === 1 ? 'word' : 'words'}`;
  if (!expanded || block.redacted) {
    return (
      <Box marginTop={1}>
        <Text color="gray" italic>
          ✻ {live ? 'Thinking…' : 'Thought'} ({summary}
          {expanded || block.redacted ? '' : ' · Ctrl+O shows thinking'})
        </Text>
      </Box>
    );
  }
  const all = (live ? renderStreamingMarkdown : renderMarkdown)(block.content, Math.max(10, width - 2));
  const keep = Math.max(1, maxRows - 1);
  const hidden = Math.max(0, all.length - keep);
  return (
    <Box flexDirection="column" marginTop={1}>
      <Text color="gray" italic>
        ✻ {live ? 'Thinking…' : 'Thought'} ({summary}){hidden > 0 ? ` … ${hidden} lines above` : ''}
      </Text>
      <Text color="gray" italic>
        {prefixLines(all.slice(hidden), '  ').join('\n')}
      </Text>
    </Box>
  );
}

export function ToolLine({ block, width, spinner }: { block: ToolUseBlock; width: number; spinner: string }) {
  const status = STATUS[block.status];
  const glyph = block.status === 'running' && spinner !== '' ? spinner : status.glyph;
  const args = toolArguments(block, Math.max(10, width - block.name.length - 8));
  return (
    <Box flexDirection="column" marginTop={1}>
      <Text wrap="truncate-end">
        <Text color={status.color}>{glyph}</Text> <Text bold>{block.name}</Text>
        <Text color="gray">({args})</Text>
      </Text>
      {block.status === 'error' && block.error ? (
        <Text color="red" wrap="truncate-end">
          {'  ⎿ '}
          {oneLine(block.error, Math.max(20, width - 6))}
        </Text>
      ) : null}
    </Box>
  );
}

/** A command tool's command, an edit's path, else the input's fields. */
function toolArguments(block: ToolUseBlock, max: number): string {
  const command = commandOf(block);
  if (command) return oneLine(command.command, max);
  const edit = fileEditOf(block);
  if (edit?.path) return oneLine(edit.path, max);
  return describeInput(block.input, max);
}

function SystemLine({ block }: { block: SystemBlock }) {
  switch (block.subtype) {
    case 'error':
      return (
        <Box marginTop={1}>
          <Text color="red">✗ {block.content}</Text>
        </Box>
      );
    case 'compaction':
      return (
        <Box marginTop={1}>
          <Text color="yellow">※ {compactionText(block)}</Text>
        </Box>
      );
    case 'interrupted':
    case 'aborted':
      return (
        <Box marginTop={1}>
          <Text color="yellow">⏹ {block.content}</Text>
        </Box>
      );
    default:
      return (
        <Box marginTop={1}>
          <Text color="gray">· {block.content}</Text>
        </Box>
      );
  }
}

function compactionText(block: SystemBlock): string {
  const data = (typeof block.data === 'object' && block.data !== null ? block.data : {}) as Record<string, unknown>;
  const before =
    typeof data['tokensBefore'] === 'number'
      ? data['tokensBefore']
      : typeof data['preTokens'] === 'number'
        ? data['preTokens']
        : undefined;
  const after = typeof data['tokensAfter'] === 'number' ? data['tokensAfter'] : undefined;
  const trigger = typeof data['trigger'] === 'string' ? ` (${data['trigger']})` : '';
  const version = typeof data['version'] === 'number' ? ` · checkpoint v${data['version']}` : '';
  if (before === undefined) return `Context compacted${trigger}: ${block.content}`;
  return `Context compacted${trigger}: ${formatCount(before)}${after !== undefined ? ` → ${formatCount(after)}` : ''} tokens${version}. Nothing was deleted.`;
}

/** A worker agent as a thread: one summary line with its live status, time and cost, and its latest work (all of it with details on). */
export function WorkerThread({
  block,
  thread,
  cost,
  expanded,
  width,
  now,
  spinner,
  maxRows,
}: {
  block: SubagentBlock;
  thread: readonly ConversationBlock[];
  cost: number | undefined;
  expanded: boolean;
  width: number;
  now: number;
  spinner: string;
  maxRows: number;
}) {
  const status = STATUS[block.status];
  const finished = block.status === 'success' || block.status === 'error';
  const glyph = !finished && spinner !== '' ? spinner : status.glyph;
  const elapsed = formatDuration((block.completedAt ?? now) - block.createdAt);
  const spent = block.costUsd ?? cost;
  const word =
    block.status === 'pending'
      ? 'queued'
      : block.status === 'running'
        ? 'running'
        : block.status === 'success'
          ? 'done'
          : 'failed';
  const head = `${block.name} worker · ${word} ${finished ? 'in ' : ''}${elapsed}${spent !== undefined ? ` · ${formatCost(spent)}` : ''} · `;
  const body =
    finished && !expanded ? [] : threadRows(thread, expanded, Math.max(1, maxRows - 1 - (finished ? 1 : 0)), width - 4);
  // Expanded, the thread already ends with the worker's answer when that is its output.
  const lastText = [...thread].reverse().find((entry) => entry.type === 'assistant_text');
  const showOutput =
    finished &&
    block.output !== undefined &&
    block.output !== '' &&
    !(expanded && lastText?.type === 'assistant_text' && lastText.content.trim() === block.output.trim());
  return (
    <Box flexDirection="column" marginTop={1}>
      <Text wrap="truncate-end">
        <Text color={status.color}>⎇ {glyph}</Text> <Text bold>{head}</Text>
        <Text color="gray">{oneLine(block.input, Math.max(10, width - head.length - 6))}</Text>
      </Text>
      {body.map((row, index) => (
        <Text key={index} color="gray" wrap="truncate-end">
          {'  │ '}
          {row}
        </Text>
      ))}
      {showOutput ? (
        <Text color={block.status === 'error' ? 'red' : 'gray'} wrap="truncate-end">
          {'  ⎿ '}
          {oneLine(block.output ?? '', Math.max(20, width - 6))}
        </Text>
      ) : null}
    </Box>
  );
}

/** A thread's blocks, one line each: the latest one collapsed, the last `maxRows` expanded. */
function threadRows(thread: readonly ConversationBlock[], expanded: boolean, maxRows: number, width: number): string[] {
  const tools = new Map<string, string>();
  for (const block of thread) if (block.type === 'tool_use') tools.set(block.toolUseId, block.name);
  const rows = thread
    .filter((block) => block.type !== 'user_message')
    .map((block) => blockSummary(block, width, tools));
  if (rows.length === 0) return [];
  if (!expanded) return rows.slice(-1);
  return rows.slice(-maxRows);
}

function blockSummary(block: ConversationBlock, width: number, tools: ReadonlyMap<string, string>): string {
  switch (block.type) {
    case 'user_message':
      return `❯ ${oneLine(block.content, width - 2)}`;
    case 'assistant_text':
      return renderInlineMarkdown(oneLine(block.content, width)) || '…';
    case 'thinking':
      return `✻ thinking (${wordCount(block.content)} words)`;
    case 'tool_use':
      return `${STATUS[block.status].glyph} ${block.name}(${describeInput(block.input, Math.max(10, width - block.name.length - 4))})`;
    case 'tool_result': {
      // Collapsed, a result stands alone: say which tool it answers.
      const tool = tools.get(block.toolUseId);
      const head = tool ? `⎿ ${tool}: ` : '⎿ ';
      return `${head}${shortResult(block.content, width - head.length)}`;
    }
    case 'system':
      return `· ${oneLine(block.content, width - 2)}`;
    case 'subagent':
      return `⎇ ${block.name} (${block.status})`;
  }
}

/** The block in flight, cut to `maxRows` rows so the live area never outgrows the screen. */
export function LiveBlock({
  block,
  expanded,
  width,
  maxRows,
  spinner,
}: {
  block: ConversationBlock;
  expanded: boolean;
  width: number;
  maxRows: number;
  spinner: string;
}) {
  switch (block.type) {
    case 'assistant_text': {
      // One row goes to the margin above; one more to the "lines above" line when the text is cut.
      const columns = Math.max(10, width - 1);
      const all = renderStreamingMarkdown(block.content, columns);
      if (all.length === 0) all.push('');
      // Rows lose trailing spaces when they wrap; the cursor still shows that the next word is a new one
      // (when the row has room: a row past the width would make Ink wrap the whole block again).
      const last = all[all.length - 1]!;
      all[all.length - 1] = last + (block.content.endsWith(' ') && stringColumns(last) < columns ? ' ▍' : '▍');
      const available = Math.max(1, maxRows - 1);
      const keep = all.length > available ? Math.max(1, available - 1) : available;
      const hidden = Math.max(0, all.length - keep);
      const rows = all.slice(hidden);
      return (
        <Box flexDirection="column" marginTop={1}>
          {hidden > 0 ? (
            <Text color="gray">… {hidden} more lines above (all of it is printed when the block is done)</Text>
          ) : null}
          <Text>{rows.join('\n')}</Text>
        </Box>
      );
    }
    case 'thinking':
      return <ThinkingLine block={block} expanded={expanded} live width={width} maxRows={maxRows} />;
    case 'tool_use':
      return <ToolLine block={block} width={width} spinner={spinner} />;
    default:
      return <FinishedBlock block={block} expanded={expanded} width={width} />;
  }
}
