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
  if (is(error, RateLimitError)) {
    if (error.code === 'insufficient_quota') {
      return {
        ...common,
        code: 'RATE_LIMITED',
        message: `${endpoint} refused the request: the account is out of quota (HTTP 429 insufficient_quota).`,
        advice: "Check the account's plan and billing, or configure another back end.",
        retryable: false,
      };
    }
    const retryAfter = error.headers?.get('retry-after');
    return {
      ...common,
      code: 'RATE_LIMITED',
      message: `${endpoint} is rate limiting requests for ${context.model} (HTTP 429).`,
      advice: `Wait${retryAfter ? ` ${retryAfter} s` : ' a moment'} and send the message again, or lower the request rate.`,
      retryable: true,
    };
  }
  if (is(error, InternalServerError)) {
    return {
      ...common,
      code: 'SERVER_ERROR',
      message: `${endpoint} failed with HTTP ${status ?? '5xx'} while answering with ${context.model}.`,
      advice: 'This is on the server side: send the message again in a moment.',
      retryable: true,
    };
  }
  if (is(error, AuthenticationError) || is(error, PermissionDeniedError)) {
    return {
      ...common,
      code: 'AUTHENTICATION_FAILED',
      message: `${endpoint} refused the API key (HTTP ${status}).`,
      advice: `Set ${context.apiKeyVariable} to a valid key for this server.`,
      retryable: false,
    };
  }
  if (is(error, NotFoundError)) {
    return {
      ...common,
      code: 'MODEL_NOT_FOUND',
      message: `${endpoint} does not know model "${context.model}" (HTTP 404).`,
      advice: `Check the model name (run \`parley backends\` to see the configured one) and that ${context.baseUrlVariable} is the right server.`,
      retryable: false,
    };
  }
  if (is(error, BadRequestError)) {
    return {
      ...common,
      code: 'BAD_REQUEST',
      message: `${endpoint} rejected the request as invalid (HTTP 400${error.code ? ` ${error.code}` : ''}).`,
      advice:
        error.code === 'context_length_exceeded'
          ? 'The conversation is too long for the model: compact the session or use a model with a larger window.'
          : 'Check the model name and the tools offered to it; the server said what it did not accept below.',
      retryable: false,
    };
  }
  return {
    ...common,
    code: status !== undefined && status >= 500 ? 'SERVER_ERROR' : 'UNKNOWN',
    message: `${endpoint} answered HTTP ${status ?? '(no status)'}.`,
    advice: 'Send the message again; if it keeps failing, check the server and its logs.',
    retryable: status !== undefined && status >= 500,
  };
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
