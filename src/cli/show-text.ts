import type { SessionManager } from '../sessions/index.js';
import { ConversationText } from './conversation-text.js';
import { describeScope, formatCost, renderConversation, type RenderOptions } from './render.js';
import type { SessionMetrics } from '../conversation/index.js';
import type { SessionRecord } from '../store/index.js';

/**
 * What `parley show <id>` prints (without the final newline): the session's heading and its
 * conversation, as chunks to write in order. An imported session whose blocks are not built yet
 * is rendered as its copy is parsed, into `ConversationText`, which keeps the lines' places rather
 * than the blocks or the text (those go to a temporary file past 8 MB), and nothing is written to
 * the store; any other from its conversation as the session manager folds it.
 */
export async function* sessionTextChunks(
  manager: SessionManager,
  sessionId: string,
  options: RenderOptions = {},
): AsyncGenerator<string | Buffer> {
  const record = await manager.getSession(sessionId);
  const streamed = new ConversationText(record.sessionId, options);
  try {
    if (await manager.parseUnbuiltSession(sessionId, (events) => streamed.add(events))) {
      yield heading(record, streamed.metrics);
      yield* streamed.chunks();
      return;
    }
  } finally {
    streamed.close();
  }
  const runtime = await manager.getRuntimeSession(sessionId);
  const branches = await branchLine(manager, record);
  yield `${heading(record, runtime.metrics)}${branches}${renderConversation(runtime.blocks, runtime.subagents, options)}`;
}

/** `sessionTextChunks` as one string. */
export async function sessionText(
  manager: SessionManager,
  sessionId: string,
  options: RenderOptions = {},
): Promise<string> {
  const parts: Buffer[] = [];
  for await (const chunk of sessionTextChunks(manager, sessionId, options))
    parts.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
  return Buffer.concat(parts).toString('utf8');
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
