import { describeIssues, isParleyError } from '../conversation/index.js';
import {
  JSONRPC_VERSION,
  RequestIdSchema,
  RpcErrorCode,
  isMethodName,
  methods,
  rpcCodeForParleyCode,
  type MethodName,
  type MethodResultInput,
  type ParsedMethodParams,
  type RequestId,
  type RpcErrorData,
  type WireError,
} from '../protocol/index.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type Logger = (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;

/** What a handler knows about the request it serves. */
export interface RequestContext {
  connectionId: string;
  channelId: string;
}

export type Handler<M extends MethodName> = (
  params: ParsedMethodParams<M>,
  context: RequestContext,
) => Promise<MethodResultInput<M>>;
export type Handlers = { [M in MethodName]: Handler<M> };

export interface DispatchOptions {
  /** Takes one request's worth of rate; false answers RATE_LIMITED. */
  admit?: () => boolean;
  retryAfterMs?: () => number;
  /** True once the server is shutting down: new requests get SHUTTING_DOWN. */
  closing?: () => boolean;
}

/** Most requests in one batch; a larger batch is refused whole. */
export const MAX_BATCH = 100;

/**
 * The one place where frames become calls and failures become JSON-RPC errors: params are parsed
 * with the method's schema before its typed handler runs; a zod failure is INVALID_PARAMS with
 * every issue spelled out; a ParleyError keeps its mapped code and its string code in `data.code`;
 * anything else is INTERNAL_ERROR, and is logged.
 */
export class Dispatcher {
  constructor(
    private readonly handlers: Handlers,
    private readonly log: Logger,
  ) {}

  /** Answers one text frame: the response frame, or undefined when nothing is owed (notifications only). */
  async handleFrame(
    frame: string,
    context: RequestContext,
    options: DispatchOptions = {},
  ): Promise<string | undefined> {
    let value: unknown;
    try {
      value = JSON.parse(frame);
    } catch {
      if (options.admit && !options.admit()) return serialize(rateLimited(null, options));
      return serialize(
        errorResponse(null, {
          code: RpcErrorCode.PARSE_ERROR,
          message: 'Parse error: the frame is not valid JSON.',
          data: { code: 'PARSE_ERROR' },
        }),
      );
    }
    if (Array.isArray(value)) {
      if (value.length === 0) return serialize(errorResponse(null, invalidRequest('an empty batch')));
      if (value.length > MAX_BATCH)
        return serialize(
          errorResponse(null, invalidRequest(`a batch of ${value.length} requests (at most ${MAX_BATCH})`)),
        );
      const answers = await Promise.all(value.map((entry) => this.handleOne(entry, context, options)));
      const present = answers.filter((answer): answer is object => answer !== undefined);
      return present.length > 0 ? serialize(present) : undefined;
    }
    const answer = await this.handleOne(value, context, options);
    return answer === undefined ? undefined : serialize(answer);
  }

  private async handleOne(
    value: unknown,
    context: RequestContext,
    options: DispatchOptions,
  ): Promise<object | undefined> {
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      return errorResponse(null, invalidRequest('not a JSON object'));
    const envelope = value as Record<string, unknown>;
    const hasId = Object.prototype.hasOwnProperty.call(envelope, 'id');
    const idCheck = RequestIdSchema.safeParse(envelope['id']);
    const id: RequestId | null = hasId && idCheck.success ? idCheck.data : null;
    if (envelope['jsonrpc'] !== JSONRPC_VERSION) return errorResponse(id, invalidRequest('`jsonrpc` is not "2.0"'));
    if (typeof envelope['method'] !== 'string' || envelope['method'].length === 0)
      return errorResponse(id, invalidRequest('`method` is missing or not a string'));
    if (hasId && !idCheck.success) return errorResponse(null, invalidRequest('`id` must be a string or an integer'));
    for (const key of Object.keys(envelope)) {
      if (key !== 'jsonrpc' && key !== 'id' && key !== 'method' && key !== 'params')
        return errorResponse(id, invalidRequest(`unknown member "${key.slice(0, 40)}"`));
    }
    // A notification (no id) gets no answer, whatever happens (JSON-RPC 2.0); no method is one.
    if (!hasId) return undefined;
    if (options.admit && !options.admit()) return rateLimited(id, options);
    if (options.closing?.())
      return errorResponse(id, {
        code: RpcErrorCode.SHUTTING_DOWN,
        message: 'The server is shutting down; reconnect to the next one.',
        data: { code: 'SHUTTING_DOWN' },
      });
    const method = envelope['method'];
    if (!isMethodName(method)) {
      return errorResponse(id, {
        code: RpcErrorCode.METHOD_NOT_FOUND,
        message: `Method not found: "${method.slice(0, 100)}". See docs/protocol.md for the methods.`,
        data: { code: 'METHOD_NOT_FOUND', method: method.slice(0, 100) },
      });
    }
    const raw = envelope['params'] ?? {};
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      return errorResponse(id, invalidParams(method, ['(root): params must be an object (named params)']));
    }
    const parsed = methods[method].params.safeParse(raw);
    if (!parsed.success)
      return errorResponse(id, invalidParams(method, describeIssues(parsed.error.issues).split('; ')));
    try {
      const handler = this.handlers[method] as (params: unknown, context: RequestContext) => Promise<unknown>;
      const result = await handler(parsed.data, context);
      return { jsonrpc: JSONRPC_VERSION, id, result: result === undefined ? null : result };
    } catch (error) {
      return errorResponse(id, this.toWireError(error, method, context));
    }
  }

  toWireError(error: unknown, method: string, context: RequestContext): WireError {
    if (isParleyError(error)) {
      const code = rpcCodeForParleyCode(error.code);
      const data: RpcErrorData = { ...jsonSafe(error.data), code: error.code, fault: error.fault };
      if (code === RpcErrorCode.INVALID_PARAMS && data.issues === undefined) data.issues = [error.message];
      return { code, message: error.message, data };
    }
    this.log('error', `Unexpected failure in ${method}`, {
      method,
      connectionId: context.connectionId,
      error: error instanceof Error ? (error.stack ?? error.message) : String(error),
    });
    return {
      code: RpcErrorCode.INTERNAL_ERROR,
      message: `Internal error in ${method}; it was logged on the server.`,
      data: { code: 'INTERNAL_ERROR', fault: 'system' },
    };
  }
}

function errorResponse(id: RequestId | null, error: WireError): object {
  return { jsonrpc: JSONRPC_VERSION, id, error };
}

function invalidRequest(what: string): WireError {
  return {
    code: RpcErrorCode.INVALID_REQUEST,
    message: `Invalid request: ${what}.`,
    data: { code: 'INVALID_REQUEST' },
  };
}

function invalidParams(method: string, issues: string[]): WireError {
  return {
    code: RpcErrorCode.INVALID_PARAMS,
    message: `Invalid params for ${method}: ${issues.join('; ')}.`,
    data: { code: 'INVALID_PARAMS', fault: 'user', method, issues },
  };
}

function rateLimited(id: RequestId | null, options: DispatchOptions): object {
  const retryAfterMs = options.retryAfterMs?.() ?? 1000;
  return errorResponse(id, {
    code: RpcErrorCode.RATE_LIMITED,
    message: `Too many requests on this connection; retry in ${retryAfterMs} ms.`,
    data: { code: 'RATE_LIMITED', fault: 'user', retryAfterMs },
  });
}

function serialize(value: unknown): string {
  return JSON.stringify(value);
}

/** An error's data as JSON can carry it: anything that does not survive a round trip is left out. */
function jsonSafe(data: Record<string, unknown>): Record<string, unknown> {
  try {
    const copy = JSON.parse(JSON.stringify(data)) as unknown;
    return typeof copy === 'object' && copy !== null && !Array.isArray(copy) ? (copy as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
