import type { BackendFailure } from '../failures.js';

/**
 * What an HTTP status from the Anthropic Messages API means for the user, shared by the
 * anthropic-api back end (which sees the client's errors) and the claude-sdk back end (which sees
 * the status the CLI reports in its result). One place, so both say the same thing.
 */
export interface ApiFailureContext {
  backend: string;
  /** Where the requests went, so a user sees which endpoint refused. */
  endpoint: string;
  model: string;
  /** The error text the API (or the CLI) gave. */
  detail?: string;
  /** Seconds from a `retry-after` header. */
  retryAfterSeconds?: number;
  /** How the user sets the key for this back end. */
  keyHint?: string;
}

/**
 * `status` is undefined for an `event: error` inside a 200 stream (the API reports an overload or
 * a failure that way once it has begun answering): its error type alone says what it was.
 */
export function failureFromStatus(
  status: number | undefined,
  errorType: string | undefined,
  context: ApiFailureContext,
): BackendFailure {
  const base = {
    backend: context.backend,
    ...(status !== undefined ? { status } : {}),
    ...(context.detail ? { detail: context.detail } : {}),
  };
  const keyHint = context.keyHint ?? 'ANTHROPIC_API_KEY';
  const how = status === undefined ? `an error event in the stream: ${errorType ?? 'no type given'}` : `HTTP ${status}`;
  if (status === 429 || errorType === 'rate_limit_error') {
    const wait = context.retryAfterSeconds !== undefined ? `in ${context.retryAfterSeconds} s` : 'in a minute';
    return {
      ...base,
      code: 'RATE_LIMITED',
      message: `${context.endpoint} rate-limited the request for ${context.model} (${how}).`,
      advice: `Wait and send the message again ${wait}, or use a smaller model or a higher rate-limit tier.`,
      retryable: true,
    };
  }
  if (status === 529 || errorType === 'overloaded_error') {
    return {
      ...base,
      code: 'SERVER_ERROR',
      message: `${context.endpoint} is overloaded (${how}) and did not answer for ${context.model}.`,
      advice: 'Send the message again in a few seconds; if it keeps happening, try another model.',
      retryable: true,
    };
  }
  if (status === 401 || errorType === 'authentication_error') {
    return {
      ...base,
      code: 'AUTHENTICATION_FAILED',
      message: `${context.endpoint} rejected the API key (${how}).`,
      advice: `Check ${keyHint}: it must be a valid key for this endpoint.`,
      retryable: false,
    };
  }
  if (status === 403 || errorType === 'permission_error') {
    return {
      ...base,
      code: 'AUTHENTICATION_FAILED',
      message: `${context.endpoint} refused access to ${context.model} (${how}).`,
      advice: `Check that the key in ${keyHint} may use this model, or choose another model.`,
      retryable: false,
    };
  }
  if (status === 404 || errorType === 'not_found_error') {
    return {
      ...base,
      code: 'MODEL_NOT_FOUND',
      message: `${context.endpoint} does not know the model "${context.model}" (${how}).`,
      advice: 'Choose a model the endpoint offers (see `parley backends`), or check the base URL.',
      retryable: false,
    };
  }
  if ((status ?? 0) >= 500 || errorType === 'api_error') {
    return {
      ...base,
      code: 'SERVER_ERROR',
      message: `${context.endpoint} failed with a server error (${how}) for ${context.model}.`,
      advice: 'Send the message again; the request did not complete and nothing was lost.',
      retryable: true,
    };
  }
  if (status === 400 || status === 413 || status === 422 || errorType === 'invalid_request_error') {
    return {
      ...base,
      code: 'BAD_REQUEST',
      message: `${context.endpoint} rejected the request for ${context.model} as invalid (${how}).`,
      advice: 'Read the detail below; if the prompt is too long, compact the session (`/compact`) and send again.',
      retryable: false,
    };
  }
  return {
    ...base,
    code: 'UNKNOWN',
    message:
      status === undefined
        ? `${context.endpoint} sent an error in the middle of its answer for ${context.model} (${how}).`
        : `${context.endpoint} answered HTTP ${status} for ${context.model}.`,
    advice: 'Read the detail below and send the message again.',
    retryable: false,
  };
}
