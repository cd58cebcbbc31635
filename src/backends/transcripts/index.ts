/** Native transcript parsers: Claude Code JSONL, Gemini CLI session files, the seeds' session layout. Pure: no file or store access. */
export * from './types.js';
export * from './lines.js';
export * from './summary-sections.js';
export { ClaudeCodeParser, parseClaudeCodeTranscript, type ClaudeCodeParserOptions } from './claude-code.js';
export { GeminiTranscriptParser, parseGeminiTranscript, type GeminiParserOptions } from './gemini-cli.js';
export * from './seed-layout.js';
export * from './writers/index.js';
export { ClaudeCodeSummaryScan, type ClaudeCodeSummary } from './claude-code/summary-scan.js';
