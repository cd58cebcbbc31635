import { stringOf, type JsonObject } from '../json.js';
import type { TranscriptInfo } from '../types.js';

/**
 * What a transcript's records say about its session, folded into `TranscriptInfo`: the ids and
 * version every record carries, titles, and where compactions happened.
 */

/** The session id and folder (from the first record naming them) and the CLI version (the last one seen). */
export function noteEnvelope(info: TranscriptInfo, record: JsonObject): void {
  if (info.nativeSessionId === undefined) {
    const sessionId = stringOf(record['sessionId']);
    if (sessionId !== undefined) info.nativeSessionId = sessionId;
  }
  if (info.cwd === undefined) {
    const cwd = stringOf(record['cwd']);
    if (cwd !== undefined) info.cwd = cwd;
  }
  const version = stringOf(record['version']);
  if (version !== undefined) info.version = version;
}

/** A title record: the user's own (`custom-title`) or a generated one (`ai-title`; an older `summary` record only fills a missing one). */
export function noteTitle(info: TranscriptInfo, type: string, record: JsonObject): void {
  switch (type) {
    case 'custom-title':
      info.customTitle = stringOf(record['customTitle']) ?? info.customTitle;
      return;
    case 'ai-title':
      info.generatedTitle = stringOf(record['aiTitle']) ?? info.generatedTitle;
      return;
    case 'summary':
      info.generatedTitle ??= stringOf(record['summary']);
      return;
    default:
  }
}

/** A compaction's summary record: it completes the boundary the system record opened, or is a compaction of its own. */
export function noteCompactionSummary(
  info: TranscriptInfo,
  summary: string,
  blockId: string | undefined,
  at: number,
): void {
  const compaction = info.compactions.at(-1);
  if (compaction !== undefined && compaction.summary === undefined) {
    compaction.summary = summary;
    if (blockId !== undefined) compaction.blockId = blockId;
  } else {
    info.compactions.push({
      summary,
      at,
      messagesBefore: info.messageCount,
      ...(blockId !== undefined ? { blockId } : {}),
    });
  }
}
