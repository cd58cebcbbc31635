import * as z from 'zod';
import type { UnsequencedEvent, ToolUseBlock, Usage } from '../../conversation/index.js';
import type { TurnEvents } from '../turn-events.js';

/**
 * The Gemini CLI's `--output-format stream-json` events (0.61.0: `init`, `message`, `tool_use`,
 * `tool_result`, `error`, `result`). One JSON object
 * per stdout line. Validated here, at the trust boundary; unknown types and fields are tolerated
 * because the format moves between releases.
 */
const Base = z.object({ timestamp: z.string().optional() });

export const GeminiInitEventSchema = Base.extend({
  type: z.literal('init'),
  session_id: z.string(),
  model: z.string().optional(),
});
export const GeminiMessageEventSchema = Base.extend({
  type: z.literal('message'),
  role: z.string(),
  content: z.string(),
  delta: z.boolean().optional(),
});
export const GeminiToolUseEventSchema = Base.extend({
  type: z.literal('tool_use'),
  tool_name: z.string(),
  tool_id: z.string(),
  parameters: z.unknown().optional(),
});
export const GeminiToolResultEventSchema = Base.extend({
  type: z.literal('tool_result'),
  tool_id: z.string(),
  status: z.string(),
  output: z.string().optional(),
  error: z.object({ type: z.string().optional(), message: z.string().optional() }).optional(),
});
export const GeminiErrorEventSchema = Base.extend({
  type: z.literal('error'),
  severity: z.string().optional(),
  message: z.string(),
});

const StatsSchema = z.object({
  total_tokens: z.number().optional(),
  input_tokens: z.number().optional(),
  output_tokens: z.number().optional(),
  cached: z.number().optional(),
  input: z.number().optional(),
  duration_ms: z.number().optional(),
  tool_calls: z.number().optional(),
  models: z.record(z.string(), z.unknown()).optional(),
});
export const GeminiResultEventSchema = Base.extend({
  type: z.literal('result'),
  status: z.string(),
  error: z.object({ type: z.string().optional(), message: z.string().optional() }).optional(),
  stats: StatsSchema.optional(),
});

export const GeminiStreamEventSchema = z.discriminatedUnion('type', [
  GeminiInitEventSchema,
  GeminiMessageEventSchema,
  GeminiToolUseEventSchema,
  GeminiToolResultEventSchema,
  GeminiErrorEventSchema,
  GeminiResultEventSchema,
]);
export type GeminiStreamEvent = z.infer<typeof GeminiStreamEventSchema>;
export type GeminiResultEvent = z.infer<typeof GeminiResultEventSchema>;

/** Parses one stdout line; undefined for noise, blank lines and event types this version does not know. */
export function parseStreamLine(line: string): GeminiStreamEvent | undefined {
  const trimmed = line.trim();
  if (!trimmed.startsWith('{')) return undefined;
  try {
    const parsed = GeminiStreamEventSchema.safeParse(JSON.parse(trimmed));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Folds stream-json events into Parley stream events for one turn. */
export class GeminiStreamMapper {
  sessionId: string | undefined;
  model: string | undefined;
  result: GeminiResultEvent | undefined;
  /** Whether the model produced anything (text or tool calls) this turn. */
  produced = false;
  private textId: string | undefined;
  private readonly tools = new Map<string, ToolUseBlock>();

  constructor(private readonly events: TurnEvents) {}

  map(event: GeminiStreamEvent): UnsequencedEvent[] {
    switch (event.type) {
      case 'init':
        this.sessionId = event.session_id;
        if (event.model && event.model !== 'auto') this.model = event.model;
        return [];
      case 'message': {
        // The user's prompt is echoed first; the session layer has already stored it.
        if (event.role !== 'assistant' || event.content === '') return [];
        this.produced = true;
        const out: UnsequencedEvent[] = [];
        if (!this.textId || !this.events.isOpen(this.textId)) {
          const started = this.events.startText('assistant_text', this.model ? { model: this.model } : {});
          this.textId = started.blockId;
          out.push(...started.events);
        }
        out.push(...this.events.appendText(this.textId, event.content));
        // A whole (non-delta) message is complete as it stands.
        if (event.delta === false) out.push(...this.events.completeText(this.textId));
        return out;
      }
      case 'tool_use': {
        this.produced = true;
        const out = this.closeText();
        const { block, events } = this.events.startToolUse({
          toolUseId: event.tool_id,
          name: event.tool_name,
          input: event.parameters ?? {},
        });
        this.tools.set(event.tool_id, block);
        return [...out, ...events];
      }
      case 'tool_result': {
        const block = this.tools.get(event.tool_id);
        if (!block) return [];
        this.tools.delete(event.tool_id);
        const isError = event.status !== 'success';
        const content =
          event.output ?? event.error?.message ?? (isError ? `The tool failed (${event.status}).` : 'Done.');
        return this.events.finishToolUse(block, {
          content,
          isError,
          ...(event.error ? { output: { error: event.error } } : {}),
        });
      }
      case 'error':
        return [
          ...this.closeText(),
          ...this.events.system('info', `Gemini CLI ${event.severity ?? 'warning'}: ${event.message}`, {
            data: { severity: event.severity },
          }),
        ];
      case 'result':
        this.result = event;
        return this.closeText();
    }
  }

  /** Closes the open text and any tool call left without a result (abort, crash). */
  finish(reason: string): UnsequencedEvent[] {
    const out = this.closeText();
    for (const block of this.tools.values())
      out.push(...this.events.finishToolUse(block, { content: reason, isError: true }));
    this.tools.clear();
    return out;
  }

  usage(): Usage | undefined {
    const stats = this.result?.stats;
    if (!stats || (stats.input_tokens === undefined && stats.output_tokens === undefined)) return undefined;
    const cached = stats.cached ?? 0;
    return {
      inputTokens: stats.input ?? Math.max(0, (stats.input_tokens ?? 0) - cached),
      outputTokens: stats.output_tokens ?? 0,
      cacheReadTokens: cached,
      cacheWriteTokens: 0,
    };
  }

  private closeText(): UnsequencedEvent[] {
    if (!this.textId) return [];
    const out = this.events.completeText(this.textId);
    this.textId = undefined;
    return out;
  }
}
