import {
  ClaudeCodeParser,
  ClaudeCodeSummaryScan,
  CodexRolloutParser,
  CodexRolloutScan,
  type EventSink,
  type TranscriptParser,
} from '../../backends/index.js';
import type { UnsequencedEvent } from '../../conversation/index.js';
import type { ImportSource } from './session-ids.js';

/**
 * The parsers of the sources whose sessions can be imported deferred (`deferred-import.ts`): one
 * file each, its blocks built by one parser. The scan reads what the listing shows at import; the
 * event parser builds the blocks on first read (`materialize.ts`, `unbuilt-session.ts`).
 */
export type DeferredSource = Extract<ImportSource, 'claude-code' | 'codex'>;

/** What a listing needs of a file, read fast: its numbers, and its metadata events in log order. */
export type SummaryScan = TranscriptParser & { readonly metadata: UnsequencedEvent[] };

export function summaryScan(source: DeferredSource, file: string): SummaryScan {
  return source === 'codex' ? new CodexRolloutScan({ file }) : new ClaudeCodeSummaryScan({ file });
}

/** The parser that builds a deferred session's events; a manifest without a source is Claude Code's (the first). */
export function eventParser(source: ImportSource | undefined, emit: EventSink, file: string): TranscriptParser {
  return source === 'codex' ? new CodexRolloutParser({ emit, file }) : new ClaudeCodeParser({ emit, file });
}

/** The checkpoint kind of a source's compaction summary. */
export function summaryKind(source: ImportSource | undefined): 'claude-code' | 'codex' {
  return source === 'codex' ? 'codex' : 'claude-code';
}
