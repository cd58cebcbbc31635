import type { APIError } from 'openai';
import { tail, type BackendFailure } from '../failures.js';
import { isInstance as is } from '../lazy-module.js';
import { openAiSdk } from './sdk.js';

export interface FailureContext {
  backend: string;
  baseURL: string;
  model: string;
  /** The environment variable that holds the key, named in advice. */
  apiKeyVariable: string;
  baseUrlVariable: string;
}

/** Turns what the `openai` client threw into a failure that says what happened and what to do. */
export function describeOpenAiError(error: unknown, context: FailureContext): BackendFailure {
  // The client's error classes; an error from the client means the SDK is loaded.
  const {
    APIConnectionError,
    APIConnectionTimeoutError,
    APIError: ApiError,
    AuthenticationError,
    BadRequestError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
  } = openAiSdk.loaded() ?? ({} as Partial<NonNullable<ReturnType<typeof openAiSdk.loaded>>>);
  const base = { backend: context.backend };
  const endpoint = context.baseURL;
  if (is(error, APIConnectionTimeoutError)) {
    return {
      ...base,
      code: 'TIMEOUT',
      message: `The request to ${endpoint} timed out before the server answered.`,
      advice: 'Try again; if it keeps happening, check that the server is not overloaded or raise the timeout.',
      retryable: true,
    };
  }
  if (is(error, APIConnectionError)) {
    const cause = describeCause(error.cause);
    return {
      ...base,
      code: 'CONNECTION_FAILED',
      message: `Could not reach ${endpoint}${cause ? ` (${cause})` : ''}.`,
      advice: `Check that the server is running and that ${context.baseUrlVariable} (or the config's baseUrl) points at it.`,
      retryable: true,
    };
  }
  if (!is(error, ApiError)) {
    const message = error instanceof Error ? error.message : String(error);
    return {
      ...base,
      code: 'UNKNOWN',
      message: `The request to ${endpoint} failed: ${message}.`,
      advice: 'Try again; if it keeps failing, report it with this message.',
      retryable: false,
    };
  }
  const status = typeof error.status === 'number' ? error.status : undefined;
  const serverMessage = apiMessage(error);
  const detail = serverMessage ? tail(serverMessage, 1000) : undefined;
  const common = { ...base, ...(status !== undefined ? { status } : {}), ...(detail ? { detail } : {}) };
  // An error sent inside a 200 stream has no status, so the client gives it no subclass: its code says what it is.
  const streamed = status === undefined ? streamErrorKind(error) : undefined;
  /** How the server said it: the HTTP status, or the error event in its stream. */
  const how = (http: string): string =>
    status === undefined ? `error in the stream: ${streamErrorName(error)}` : http;
  if (is(error, RateLimitError) || streamed === 'rate_limit' || streamed === 'quota') {
    if (error.code === 'insufficient_quota' || streamed === 'quota') {
      return {
        ...common,
        code: 'RATE_LIMITED',
        message: `${endpoint} refused the request: the account is out of quota (${how('HTTP 429 insufficient_quota')}).`,
        advice: "Check the account's plan and billing, or configure another back end.",
        retryable: false,
      };
    }
    const retryAfter = error.headers?.get('retry-after');
    return {
      ...common,
      code: 'RATE_LIMITED',
      message: `${endpoint} is rate limiting requests for ${context.model} (${how('HTTP 429')}).`,
      advice: `Wait${retryAfter ? ` ${retryAfter} s` : ' a moment'} and send the message again, or lower the request rate.`,
      retryable: true,
    };
  }
  if (is(error, InternalServerError) || streamed === 'server') {
    return {
      ...common,
      code: 'SERVER_ERROR',
      message:
        status === undefined
          ? `${endpoint} failed while answering with ${context.model} (${how('')}).`
          : `${endpoint} failed with HTTP ${status} while answering with ${context.model}.`,
      advice: 'This is on the server side: send the message again in a moment.',
      retryable: true,
    };
  }
  if (is(error, AuthenticationError) || is(error, PermissionDeniedError) || streamed === 'authentication') {
    return {
      ...common,
      code: 'AUTHENTICATION_FAILED',
      message: `${endpoint} refused the API key (${how(`HTTP ${status}`)}).`,
      advice: `Set ${context.apiKeyVariable} to a valid key for this server.`,
      retryable: false,
    };
  }
  if (is(error, NotFoundError) || streamed === 'not_found') {
    return {
      ...common,
      code: 'MODEL_NOT_FOUND',
      message: `${endpoint} does not know model "${context.model}" (${how('HTTP 404')}).`,
      advice: `Check the model name (run \`parley backends\` to see the configured one) and that ${context.baseUrlVariable} is the right server.`,
      retryable: false,
    };
  }
  if (is(error, BadRequestError) || streamed === 'bad_request') {
    return {
      ...common,
      code: 'BAD_REQUEST',
      message: `${endpoint} rejected the request as invalid (${how(`HTTP 400${error.code ? ` ${error.code}` : ''}`)}).`,
      advice:
        error.code === 'context_length_exceeded'
          ? 'The conversation is too long for the model: compact the session or use a model with a larger window.'
          : 'Check the model name and the tools offered to it; the server said what it did not accept below.',
      retryable: false,
    };
  }
  if (status === undefined) {
    return {
      ...common,
      code: 'UNKNOWN',
      message: `${endpoint} sent an error in the middle of its answer (${streamErrorName(error)}).`,
      advice: 'Read the detail below and send the message again; if it keeps failing, check the server and its logs.',
      retryable: false,
    };
  }
  return {
    ...common,
    code: status >= 500 ? 'SERVER_ERROR' : 'UNKNOWN',
    message: `${endpoint} answered HTTP ${status}.`,
    advice: 'Send the message again; if it keeps failing, check the server and its logs.',
    retryable: status >= 500,
  };
}

type StreamErrorKind = 'rate_limit' | 'quota' | 'server' | 'authentication' | 'not_found' | 'bad_request';

/**
 * What an error event of a stream is, from its `code` (the more specific) and then its `type`, in
 * the names OpenAI uses and those of the servers that copy its shape; a numeric code (OpenRouter,
 * vLLM) is an HTTP status.
 */
function streamErrorKind(error: APIError): StreamErrorKind | undefined {
  const code: unknown = error.code;
  if (typeof code === 'number') return kindOfStatus(code);
  for (const name of [code, error.type]) {
    if (typeof name !== 'string') continue;
    const kind = STREAM_ERROR_KINDS[name.toLowerCase()];
    if (kind) return kind;
    if (/^\d{3}$/.test(name)) return kindOfStatus(Number(name));
    if (name.includes('rate_limit')) return 'rate_limit';
  }
  return undefined;
}

const STREAM_ERROR_KINDS: Record<string, StreamErrorKind | undefined> = {
  insufficient_quota: 'quota',
  rate_limit_exceeded: 'rate_limit',
  rate_limit_error: 'rate_limit',
  requests: 'rate_limit',
  tokens: 'rate_limit',
  too_many_requests: 'rate_limit',
  invalid_api_key: 'authentication',
  authentication_error: 'authentication',
  invalid_authentication: 'authentication',
  unauthorized: 'authentication',
  permission_error: 'authentication',
  permission_denied: 'authentication',
  account_deactivated: 'authentication',
  model_not_found: 'not_found',
  not_found_error: 'not_found',
  server_error: 'server',
  api_error: 'server',
  internal_error: 'server',
  internal_server_error: 'server',
  service_unavailable: 'server',
  overloaded_error: 'server',
  engine_overloaded: 'server',
  context_length_exceeded: 'bad_request',
  invalid_request_error: 'bad_request',
  bad_request: 'bad_request',
  badrequesterror: 'bad_request',
};

function kindOfStatus(status: number): StreamErrorKind | undefined {
  if (status === 401 || status === 403) return 'authentication';
  if (status === 404) return 'not_found';
  if (status === 429) return 'rate_limit';
  if (status >= 500 && status <= 599) return 'server';
  if (status === 400 || status === 413 || status === 422) return 'bad_request';
  return undefined;
}

/** The error event's code and type as the user sees them, e.g. `invalid_api_key` or `server_error`. */
function streamErrorName(error: APIError): string {
  const code: unknown = error.code;
  const names = [code, error.type].filter(
    (name): name is string | number => (typeof name === 'string' && name !== '') || typeof name === 'number',
  );
  return names.length > 0 ? [...new Set(names.map(String))].join(', ') : 'no code given';
}

function apiMessage(error: APIError): string | undefined {
  const body = error.error as { message?: unknown } | undefined;
  if (body && typeof body.message === 'string') return body.message;
  return error.message || undefined;
}

function describeCause(cause: unknown): string | undefined {
  if (!(cause instanceof Error)) return undefined;
  const inner = (cause as Error & { cause?: unknown }).cause;
  const code = (inner as { code?: unknown } | undefined)?.code ?? (cause as { code?: unknown }).code;
  if (typeof code === 'string') return code === 'ECONNREFUSED' ? 'connection refused' : code;
  return cause.message;
}
