import {
  sectionsFromStateSnapshot,
  sectionsFromSummaryText,
  type NativeCompaction,
  type TranscriptInfo,
} from '../../backends/index.js';
import type { Tokenizer } from '../../conversation/index.js';
import type { CheckpointInput } from '../../store/index.js';

/** A native compaction's summary (Claude Code's compact summary, Gemini's `<state_snapshot>`, Codex's handoff summary) as a checkpoint that covers the log through `seq`. */
export async function checkpointFromCompaction(
  tokenizer: Tokenizer,
  now: () => number,
  compaction: NativeCompaction,
  seq: number,
  info: TranscriptInfo,
  kind: 'claude-code' | 'gemini-cli' | 'codex',
): Promise<CheckpointInput> {
  const text = compaction.summary ?? '';
  const sections = kind === 'gemini-cli' ? sectionsFromStateSnapshot(text).sections : sectionsFromSummaryText(text);
  let checkpointTokens = compaction.postTokens;
  if (checkpointTokens === undefined) {
    await tokenizer.load();
    checkpointTokens = tokenizer.count(text);
  }
  const pre = compaction.preTokens ?? 0;
  return {
    createdAt: new Date(compaction.at ?? now()).toISOString(),
    trigger: 'import',
    ...(compaction.trigger !== undefined ? { instructions: `native ${compaction.trigger} compaction` } : {}),
    summary: sections,
    pinned: info.firstUserMessage !== undefined ? [info.firstUserMessage] : [],
    liveHandles: [],
    covers: {
      throughSeq: seq,
      messageCount: compaction.messagesBefore ?? 0,
      ...(info.startedAt !== undefined ? { oldestMessageTimestamp: new Date(info.startedAt).toISOString() } : {}),
      ...(compaction.at !== undefined ? { newestMessageTimestamp: new Date(compaction.at).toISOString() } : {}),
    },
    tokens: {
      checkpoint: Math.max(0, Math.round(checkpointTokens)),
      lastCompactionInput: Math.max(0, Math.round(pre)),
      totalSaved: Math.max(0, Math.round(pre - (compaction.postTokens ?? checkpointTokens))),
    },
  };
}
