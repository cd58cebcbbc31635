import { randomUUID } from 'node:crypto';
import { MAIN_CONVERSATION, ParleyError } from '../conversation/index.js';
import type { AgentBackend } from '../backends/index.js';

/**
 * The summarizer compaction calls: a prompt in, the model's raw text out. Injected into
 * `createSessionManager({ summarize })`; `createBackendSummarizer` builds one from any back end.
 */
export interface SummarizeRequest {
  systemPrompt: string;
  prompt: string;
  /** Aborted when the compaction is cancelled or times out; a summarizer must stop then. */
  signal?: AbortSignal;
}

/**
 * `backend` and `model`, when set, name what answers; each checkpoint the summarizer writes records
 * them (`checkpoint.summarizer`). A plain function is a summarizer too.
 */
export type Summarizer = ((request: SummarizeRequest) => Promise<string>) & {
  readonly backend?: string;
  readonly model?: string;
};

/** Options of `createBackendSummarizer`: the back end and model that write checkpoints. */
export interface BackendSummarizerOptions {
  /** Model to ask; the back end's default otherwise. */
  model?: string;
  /** Time allowed per call. Default 120,000 ms. */
  timeoutMs?: number;
  /** Session id given to the back end per call; a fresh `compaction-<uuid>` by default, so no native history is reused. */
  sessionId?: () => string;
}

/** The summarizer's call failed (the back end reported an error, timed out, or said nothing). */
export class SummarizerError extends ParleyError {
  constructor(message: string, options: { cause?: unknown; data?: Record<string, unknown> } = {}) {
    super('SUMMARIZER_FAILED', message, { fault: 'system', ...options });
  }
}

/**
 * A summarizer that runs one turn on `backend` with no tools and returns the assistant's text.
 * A back end ends a failed turn with an error block rather than throwing; that becomes a rejection here.
 */
export function createBackendSummarizer(backend: AgentBackend, options: BackendSummarizerOptions = {}): Summarizer {
  const timeoutMs = options.timeoutMs ?? 120_000;
  const description = backend.describe();
  const model = options.model ?? description.defaultModel;
  const summarize = async ({ systemPrompt, prompt, signal }: SummarizeRequest): Promise<string> => {
    const timeout = AbortSignal.timeout(timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const name = description.name;
    const turn = backend.execute({
      sessionId: options.sessionId?.() ?? `compaction-${randomUUID()}`,
      isNewSession: true,
      prompt,
      systemPrompt,
      tools: [],
      maxTurns: 1,
      signal: combined,
      ...(options.model ? { model: options.model } : {}),
    });
    const texts = new Map<string, string>();
    const order: string[] = [];
    const errors: string[] = [];
    for await (const event of turn.events) {
      if (event.conversationId !== MAIN_CONVERSATION) continue;
      if (event.type === 'block_start' || event.type === 'block_complete') {
        const block = event.block;
        if (block.type === 'assistant_text') {
          if (!texts.has(block.id)) order.push(block.id);
          texts.set(block.id, block.content);
        } else if (block.type === 'system' && (block.subtype === 'error' || block.subtype === 'aborted')) {
          if (event.type === 'block_complete') errors.push(block.content);
        }
      } else if (event.type === 'text_delta' && texts.has(event.blockId)) {
        texts.set(event.blockId, texts.get(event.blockId)! + event.delta);
      }
    }
    if (timeout.aborted && !signal?.aborted)
      throw new SummarizerError(`The ${name} back end did not answer the compaction request within ${timeoutMs} ms.`);
    if (signal?.aborted) throw new SummarizerError('The compaction request was cancelled.', { cause: signal.reason });
    const text = order
      .map((id) => texts.get(id) ?? '')
      .join('\n')
      .trim();
    if (errors.length > 0 && text === '')
      throw new SummarizerError(`The ${name} back end failed the compaction request: ${errors.join(' ')}`);
    if (text === '') throw new SummarizerError(`The ${name} back end answered the compaction request with no text.`);
    return text;
  };
  return Object.assign(summarize, { backend: description.name, ...(model ? { model } : {}) });
}
