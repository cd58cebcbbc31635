import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ClaudeCodeSummaryScan,
  LineSplitter,
  forEachLine,
  parseClaudeCodeTranscript,
} from '../../../src/backends/index.js';
import { skimRecord } from '../../../src/backends/transcripts/claude-code/record-skim.js';
import {
  applyEvents,
  emptyConversation,
  type StreamEvent,
  type UnsequencedEvent,
} from '../../../src/conversation/index.js';
import { generateClaudeCodeTranscript } from '../../fixtures/transcripts/generate.js';

const PROJECT = join(import.meta.dirname, '..', '..', 'fixtures', 'transcripts', 'claude-code', '-home-dev-src-demo');

function metricsOf(unsequenced: readonly UnsequencedEvent[]) {
  const events = unsequenced
    .filter((event) => event.type === 'metadata_update')
    .map((event, seq) => ({ ...event, sessionId: 's', seq, at: event.at ?? 0 }) as StreamEvent);
  return applyEvents(emptyConversation('s'), events).metrics;
}

function scanText(text: string): ClaudeCodeSummaryScan {
  const scan = new ClaudeCodeSummaryScan();
  forEachLine(text, (line, number, terminated) => scan.line(line, number, terminated));
  scan.end();
  return scan;
}

function scanBytes(text: string, chunkBytes: number): ClaudeCodeSummaryScan {
  const scan = new ClaudeCodeSummaryScan();
  const splitter = new LineSplitter(
    (line, number, terminated) => scan.line(line, number, terminated),
    (buffer, start, end, number, terminated) => scan.lineBytes(buffer, start, end, number, terminated),
  );
  const bytes = Buffer.from(text);
  for (let offset = 0; offset < bytes.length; offset += chunkBytes)
    splitter.push(bytes.subarray(offset, offset + chunkBytes));
  splitter.end();
  scan.end();
  return scan;
}

let work: string;
const transcripts: Array<[string, string]> = [];
beforeAll(async () => {
  work = await fs.mkdtemp(join(tmpdir(), 'parley-summary-scan-'));
  for (const name of (await fs.readdir(PROJECT)).filter((file) => file.endsWith('.jsonl')).sort())
    transcripts.push([name, await fs.readFile(join(PROJECT, name), 'utf8')]);
  const generated = join(work, 'generated.jsonl');
  await generateClaudeCodeTranscript(generated, { targetBytes: 2_000_000, seed: 5 });
  transcripts.push(['generated', await fs.readFile(generated, 'utf8')]);
});
afterAll(async () => {
  await fs.rm(work, { recursive: true, force: true });
});

describe('ClaudeCodeSummaryScan: what a listing shows, without building blocks', () => {
  it('gives the parser’s title, counts, usage, turns, cost and compactions on every fixture and a generated transcript', () => {
    for (const [name, text] of transcripts) {
      const full = parseClaudeCodeTranscript(text);
      const scan = scanText(text);
      const pick = (info: typeof full.info) => ({
        messageCount: info.messageCount,
        blockCount: info.blockCount,
        firstUserMessage: info.firstUserMessage,
        customTitle: info.customTitle,
        generatedTitle: info.generatedTitle,
        model: info.model,
        startedAt: info.startedAt,
        endedAt: info.endedAt,
        compactions: info.compactions.map((compaction) => ({
          at: compaction.at,
          preTokens: compaction.preTokens,
          summary: compaction.summary,
        })),
        costUnknown: info.costUnknown,
      });
      expect(pick(scan.info), name).toEqual(pick(full.info));
      expect(metricsOf(scan.metadata), name).toEqual(metricsOf(full.events));
    }
  });

  it('reads lines as bytes (skimming what it does not need) to the same result as parsing them, whatever the chunk size', () => {
    for (const [name, text] of transcripts) {
      const parsed = scanText(text);
      for (const chunk of [64, 4096, 1 << 20]) {
        const skimmed = scanBytes(text, chunk);
        expect(skimmed.info, `${name}, chunks of ${chunk}`).toEqual(parsed.info);
        expect(skimmed.metadata, `${name}, chunks of ${chunk}`).toEqual(parsed.metadata);
      }
    }
  });

  it('reports a malformed and a cut-off line as the parser does', () => {
    const [, text] = transcripts[0]!;
    const lines = text.trimEnd().split('\n');
    const broken = [lines[0], '{"type":"user", not json', ...lines.slice(1), lines.at(-1)!.slice(0, 30)].join('\n');
    const scan = scanBytes(broken, 4096);
    expect(scan.warnings.map((warning) => [warning.code, warning.line])).toEqual([
      ['MALFORMED_LINE', 2],
      ['TRUNCATED_LINE', lines.length + 2],
    ]);
  });
});

describe('skimRecord', () => {
  const skim = (text: string) => {
    const bytes = Buffer.from(`xx${text}yy`);
    return skimRecord(bytes, 2, bytes.length - 2);
  };

  it('keeps the summary’s fields as JSON.parse reads them and drops the rest', () => {
    const record = {
      parentUuid: null,
      type: 'assistant',
      uuid: 'u-1',
      timestamp: '2026-01-01T00:00:00.000Z',
      toolUseResult: {
        stdout: 'a "quoted" \\ path\\',
        nested: [[{ deep: ['}', ']', '{'] }]],
        n: -1.5e3,
        ok: true,
        none: null,
      },
      message: {
        id: 'msg-1',
        model: 'claude',
        usage: { input_tokens: 3, output_tokens: 4 },
        content: [
          { type: 'text', text: 'héllo “world” \\n \u2028 \\"' },
          { type: 'tool_use', name: 'Task', id: 't-1', input: { prompt: '}]"{' } },
          { type: 'thinking', thinking: 'secret', signature: 'abc' },
        ],
      },
      'an unread key': [1, { a: 'b' }],
    };
    expect(skim(JSON.stringify(record))).toEqual({
      parentUuid: null,
      type: 'assistant',
      uuid: 'u-1',
      timestamp: '2026-01-01T00:00:00.000Z',
      message: {
        id: 'msg-1',
        model: 'claude',
        usage: { input_tokens: 3, output_tokens: 4 },
        content: [
          { type: 'text', text: 'héllo “world” \\n \u2028 \\"' },
          { type: 'tool_use', name: 'Task' },
          { type: 'thinking' },
        ],
      },
    });
    expect(skim(' { "type" : "user" , "message" : { "content" : "a prompt" } } ')).toEqual({
      type: 'user',
      message: { content: 'a prompt' },
    });
  });

  it('gives up (the caller parses the line) on anything that is not one complete object', () => {
    for (const text of [
      '',
      '[1,2]',
      '{"type":"user"',
      '{"type":"user"} trailing',
      '{"a":"unterminated}',
      '{"a":tru}',
      '{"a":1,}x',
      '{"type":"us\\u0065r"',
    ]) {
      expect(skim(text), text).toBeUndefined();
    }
    expect(skim('{"type":"us\\u0065r"}')).toEqual({ type: 'user' });
    // Literals are checked byte by byte, kept or skipped, as JSON.parse would read them.
    for (const literal of ['0', '-0', '12', '-1.5', '2.5e-3', '1E+9', '-0.0e0', 'true', 'false', 'null']) {
      expect(skim(`{"costUSD":${literal},"other":${literal}}`), literal).toEqual({
        costUSD: JSON.parse(literal) as unknown,
      });
    }
    for (const literal of ['01', '1.', '.5', '-', '1e', '1e+', '+1', '0x1', 'True', 'nul', 'nulll', 'NaN']) {
      expect(skim(`{"costUSD":${literal}}`), `kept ${literal}`).toBeUndefined();
      expect(skim(`{"other":${literal}}`), `skipped ${literal}`).toBeUndefined();
    }
    // A key written with escapes could spell a field the scan reads: the line is parsed instead.
    expect(skim('{"typ\\u0065":"user"}')).toBeUndefined();
  });
});
