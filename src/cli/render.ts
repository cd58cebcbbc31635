import { oneLine, type ConversationBlock, type SessionMetrics, type SubagentThread } from '../conversation/index.js';
import type { SessionRecord } from '../store/index.js';

/** Plain-text rendering of blocks for `parley show` and `parley chat` (the TUI has its own). */
export function renderBlock(block: ConversationBlock, indent = ''): string {
  // Unindented text is itself: splitting and joining a long message cost a tenth of rendering it.
  const lines = (text: string) =>
    indent === ''
      ? text
      : text
          .split('\n')
          .map((line) => `${indent}${line}`)
          .join('\n');
  switch (block.type) {
    case 'user_message':
      return lines(`> ${block.content}${block.pinned ? '  [pinned]' : ''}`);
    case 'assistant_text':
      return lines(block.content);
    case 'thinking':
      return lines(`(thinking${block.redacted ? ', redacted' : ''}: ${oneLine(block.content, 100)})`);
    case 'tool_use':
      return lines(
        `[tool ${block.name} ${block.status}] ${oneLine(JSON.stringify(block.input ?? null), 120)}${block.error ? ` — ${block.error}` : ''}`,
      );
    case 'tool_result':
      return lines(`[result${block.isError ? ' error' : ''}] ${oneLine(block.content, 160)}`);
    case 'system':
      return lines(`-- ${block.subtype}: ${block.content}`);
    case 'subagent':
      return lines(
        `[agent ${block.name} (${block.subagentId}) ${block.status}${block.costUsd !== undefined ? ` $${block.costUsd.toFixed(4)}` : ''}] ${oneLine(block.input, 100)}${block.output ? `\n  → ${oneLine(block.output, 160)}` : ''}`,
      );
  }
}

export interface RenderOptions {
  /** End with one line counting the native records kept in the session but not rendered. */
  verbose?: boolean;
}

export function renderConversation(
  blocks: readonly ConversationBlock[],
  subagents: readonly SubagentThread[],
  options: RenderOptions = {},
): string {
  const out: string[] = [];
  const hidden = new HiddenRecords();
  const render = (block: ConversationBlock, indent?: string): void => {
    if (!hidden.takes(block)) out.push(renderBlock(block, indent));
  };
  for (const block of blocks) {
    render(block);
    if (block.type === 'subagent') {
      const thread = subagents.find((candidate) => candidate.id === block.subagentId);
      for (const inner of thread?.blocks ?? []) render(inner, '    │ ');
    }
  }
  const shown = new Set(
    blocks.filter((block) => block.type === 'subagent').map((block) => (block as { subagentId: string }).subagentId),
  );
  for (const thread of subagents) {
    if (shown.has(thread.id)) continue;
    out.push(`[thread ${thread.id}]`);
    for (const inner of thread.blocks) render(inner, '    │ ');
  }
  const summary = options.verbose === true ? hidden.summary() : undefined;
  if (summary !== undefined) out.push(summary);
  return out.join('\n');
}

/**
 * Native records Parley keeps but does not render (`unknown_record`: Claude Code's `progress`,
 * `file-history-snapshot`, `queue-operation`, titles): half of a Claude Code 2.1 session's records,
 * so they are counted, not printed one by one.
 */
export class HiddenRecords {
  private readonly kinds = new Map<string, number>();
  private total = 0;

  /** Counts the block and answers true when it is one of those records. */
  takes(block: ConversationBlock): boolean {
    if (block.type !== 'system' || block.subtype !== 'unknown_record') return false;
    const kind = /"([^"]*)"/.exec(block.content)?.[1] ?? 'untyped';
    this.kinds.set(kind, (this.kinds.get(kind) ?? 0) + 1);
    this.total++;
    return true;
  }

  /** One line naming how many of each kind were not shown, or undefined when there were none. */
  summary(): string | undefined {
    if (this.total === 0) return undefined;
    const kinds = [...this.kinds]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .map(([kind, count]) => `${kind} ${count}`);
    return `-- ${this.total} native record(s) kept but not shown: ${kinds.join(', ')}`;
  }
}

export function formatCost(metrics: SessionMetrics | undefined): string {
  if (!metrics) return '-';
  // An estimate from the price table (usage recorded without a cost) reads `~$1.23`.
  return `${metrics.costEstimated === true ? '~' : ''}$${metrics.costUsd.toFixed(2)}${metrics.costUnknown ? '+?' : ''}`;
}

export function describeScope(record: SessionRecord): string {
  const scope = record.scope;
  switch (scope.kind) {
    case 'feature':
      return `feature ${scope.featureId}`;
    case 'task':
      return `task ${scope.featureId}/${scope.taskId} (${scope.taskState})`;
    case 'draft':
      return `draft ${scope.role}${scope.taskSlug ? ` on ${scope.taskSlug}` : ''}`;
    case 'workflow':
      return `workflow ${scope.harness}/${scope.agent}`;
    case 'imported':
      return `imported (${scope.source})`;
  }
}
