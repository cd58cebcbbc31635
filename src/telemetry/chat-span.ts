import {
  context as otelContext,
  SpanKind,
  SpanStatusCode,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import type { Usage } from '../conversation/index.js';
import { ATTR, OPERATION, PARLEY_ATTR, providerNameOf } from './conventions.js';
import { genAiInstruments, parleyTracer } from './instruments.js';

/**
 * A `chat {model}` span for one model call of a managed back end (one HTTP request; a turn with
 * tool calls makes several). Its parent is `parent`, the back end's `ExecuteRequest.traceContext()`
 * (the turn's `invoke_agent` span, or the tool call a worker runs for); without one, the active
 * context. Undefined when no tracing SDK records it.
 */
export interface ChatSpan {
  end(outcome: {
    responseModel?: string | undefined;
    usage?: Usage | undefined;
    finishReason?: string | null | undefined;
    error?: unknown;
  }): void;
}

export function startChatSpan(backend: string, requestModel: string, parent?: Context): ChatSpan | undefined {
  const attributes: Attributes = {
    [ATTR.operationName]: OPERATION.chat,
    [ATTR.providerName]: providerNameOf(backend),
    [ATTR.requestModel]: requestModel,
    [PARLEY_ATTR.backend]: backend,
  };
  const span = parleyTracer().startSpan(
    `${OPERATION.chat} ${requestModel}`,
    { kind: SpanKind.CLIENT, attributes },
    parent ?? otelContext.active(),
  );
  if (!span.isRecording()) return undefined;
  return new RecordingChatSpan(span, attributes, performance.now());
}

class RecordingChatSpan implements ChatSpan {
  private ended = false;

  constructor(
    private readonly span: Span,
    private readonly metricAttributes: Attributes,
    private readonly started: number,
  ) {}

  end(outcome: Parameters<ChatSpan['end']>[0]): void {
    if (this.ended) return;
    this.ended = true;
    const attributes: Attributes = {};
    if (outcome.responseModel) attributes[ATTR.responseModel] = outcome.responseModel;
    if (outcome.finishReason) attributes[ATTR.finishReasons] = [outcome.finishReason];
    if (outcome.usage) {
      attributes[ATTR.inputTokens] = outcome.usage.inputTokens;
      attributes[ATTR.outputTokens] = outcome.usage.outputTokens;
    }
    let errorType: string | undefined;
    if (outcome.error !== undefined) {
      errorType = errorTypeOf(outcome.error);
      attributes[ATTR.errorType] = errorType;
      this.span.setStatus({
        code: SpanStatusCode.ERROR,
        message: outcome.error instanceof Error ? outcome.error.message : String(outcome.error),
      });
    }
    this.span.setAttributes(attributes);
    this.span.end();
    const { tokenUsage, operationDuration } = genAiInstruments();
    const metric = {
      ...this.metricAttributes,
      ...(outcome.responseModel ? { [ATTR.responseModel]: outcome.responseModel } : {}),
    };
    if (outcome.usage) {
      tokenUsage.record(outcome.usage.inputTokens, { ...metric, [ATTR.tokenType]: 'input' });
      tokenUsage.record(outcome.usage.outputTokens, { ...metric, [ATTR.tokenType]: 'output' });
    }
    operationDuration.record(
      (performance.now() - this.started) / 1000,
      errorType ? { ...metric, [ATTR.errorType]: errorType } : metric,
    );
  }
}

function errorTypeOf(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const { code, status } = error as { code?: unknown; status?: unknown };
    if (typeof code === 'string') return code;
    if (typeof status === 'number') return String(status);
  }
  return error instanceof Error ? error.name : 'error';
}
