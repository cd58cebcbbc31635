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

export function renderConversation(blocks: readonly ConversationBlock[], subagents: readonly SubagentThread[]): string {
  const out: string[] = [];
  for (const block of blocks) {
    out.push(renderBlock(block));
    if (block.type === 'subagent') {
      const thread = subagents.find((candidate) => candidate.id === block.subagentId);
      for (const inner of thread?.blocks ?? []) out.push(renderBlock(inner, '    │ '));
    }
  }
  const shown = new Set(
    blocks.filter((block) => block.type === 'subagent').map((block) => (block as { subagentId: string }).subagentId),
  );
  for (const thread of subagents) {
    if (shown.has(thread.id)) continue;
    out.push(`[thread ${thread.id}]`);
    for (const inner of thread.blocks) out.push(renderBlock(inner, '    │ '));
  }
  return out.join('\n');
}

export function formatCost(metrics: SessionMetrics | undefined): string {
  if (!metrics) return '-';
  return `$${metrics.costUsd.toFixed(2)}${metrics.costUnknown ? '+?' : ''}`;
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
