import type { ParsedTranscripts, RawTranscripts } from '../agent-backend.js';
import {
  BlockCollector,
  ClaudeCodeParser,
  forEachLine,
  type TranscriptParser,
  type TranscriptWarning,
} from '../transcripts/index.js';

/**
 * Claude Code transcripts (the main JSONL and one per subagent, as `readSessionTranscripts`
 * returns them) to blocks and subagent threads, with the shared Claude Code parser. A subagent's
 * thread is named by its agent id (the file's `agent-<id>.jsonl`), as the importer names it; its
 * copies of the parent's assistant messages are dropped.
 */
export function parseClaudeSdkTranscripts(transcripts: RawTranscripts): ParsedTranscripts {
  const collector = new BlockCollector();
  const subagents = transcripts.subagents ?? [];
  const main = new ClaudeCodeParser({
    emit: (event) => collector.add(event),
    file: 'main',
    collectMessageIds: subagents.length > 0,
  });
  const info = run(main, transcripts.main);
  const warnings: TranscriptWarning[] = [...main.warnings];
  for (const subagent of subagents) {
    const parser = new ClaudeCodeParser({
      emit: (event) => collector.add(event),
      conversationId: subagent.id,
      parentMessageIds: main.messageIds,
      file: `agent-${subagent.id}.jsonl`,
    });
    run(parser, subagent.rawTranscript);
    warnings.push(...parser.warnings);
  }
  const raw = new Map(subagents.map((subagent) => [subagent.id, subagent.rawTranscript]));
  return {
    blocks: collector.main,
    subagents: collector.subagents().map((thread) => {
      const rawTranscript = raw.get(thread.id);
      return rawTranscript === undefined ? thread : { ...thread, rawTranscript };
    }),
    warnings,
    ...(info.nativeSessionId !== undefined ? { nativeSessionId: info.nativeSessionId } : {}),
  };
}

function run(parser: TranscriptParser, text: string) {
  forEachLine(text, (line, lineNumber, terminated) => parser.line(line, lineNumber, terminated));
  return parser.end();
}
