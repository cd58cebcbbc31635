import type { SessionManager } from '../sessions/index.js';
import { ConversationText } from './conversation-text.js';
import { describeScope, formatCost, renderConversation, type RenderOptions } from './render.js';
import type { SessionMetrics } from '../conversation/index.js';
import type { SessionRecord } from '../store/index.js';

/**
 * What `parley show <id>` prints (without the final newline): the session's heading and its
 * conversation. An imported session whose blocks are not built yet is rendered as its copy is parsed
 * (`ConversationText`), holding the text rather than the blocks, and nothing is written; any other
 * from its conversation as the session manager folds it.
 */
export async function sessionText(
  manager: SessionManager,
  sessionId: string,
  options: RenderOptions = {},
): Promise<string> {
  const record = await manager.getSession(sessionId);
  const streamed = new ConversationText(record.sessionId, options);
  if (await manager.parseUnbuiltSession(sessionId, (events) => streamed.add(events))) {
    return `${heading(record, streamed.metrics)}${streamed.text()}`;
  }
  const runtime = await manager.getRuntimeSession(sessionId);
  return `${heading(record, runtime.metrics)}${renderConversation(runtime.blocks, runtime.subagents, options)}`;
}

function heading(record: SessionRecord, metrics: SessionMetrics): string {
  return (
    `${record.sessionId} — ${describeScope(record)} — ${record.type}${record.readOnly ? ' (read only)' : ''}\n` +
    (record.forkedFrom ? `forked from ${record.forkedFrom.sessionId} at seq ${record.forkedFrom.seq}\n` : '') +
    `turns ${metrics.turns} · tokens in ${metrics.inputTokens} out ${metrics.outputTokens} · cost ${formatCost(metrics)} · compactions ${record.stats.totalCompactions}\n\n`
  );
}
