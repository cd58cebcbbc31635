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
  const branches = await branchLine(manager, record);
  return `${heading(record, runtime.metrics)}${branches}${renderConversation(runtime.blocks, runtime.subagents, options)}`;
}

/** For a session that branched: which branch is shown (the active one) and the others' names. */
async function branchLine(manager: SessionManager, record: SessionRecord): Promise<string> {
  if (record.segments === undefined && record.head === undefined) return '';
  const branches = await manager.listBranches(record.sessionId);
  const active = branches.find((branch) => branch.active);
  const others = branches.filter((branch) => !branch.active).map((branch) => `${branch.id} (to seq ${branch.tipSeq})`);
  return (
    `branch ${active?.id ?? '?'} (active, to seq ${active?.tipSeq ?? '?'})` +
    (others.length > 0 ? ` · other branches: ${others.join(', ')} — parley branches ${record.sessionId}` : '') +
    '\n\n'
  );
}

function heading(record: SessionRecord, metrics: SessionMetrics): string {
  return (
    `${record.sessionId} — ${describeScope(record)} — ${record.type}${record.readOnly ? ' (read only)' : ''}\n` +
    (record.forkedFrom ? `forked from ${record.forkedFrom.sessionId} at seq ${record.forkedFrom.seq}\n` : '') +
    `turns ${metrics.turns} · tokens in ${metrics.inputTokens} out ${metrics.outputTokens} · cost ${formatCost(metrics)} · compactions ${record.stats.totalCompactions}\n\n`
  );
}
