import { tail, type BackendFailure } from '../failures.js';

export interface ProcessOutcome {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** stderr without the CLI's harmless startup noise. */
  stderr: string;
  /** The `result` event's error, when the CLI wrote one. */
  resultError?: { type?: string; message?: string };
  spawnError?: Error;
}

/** Lines the CLI always writes to stderr; they say nothing about a failure. */
const NOISE = [
  /^Warning: 256-color support not detected/,
  /^Ripgrep is not available/,
  /^\[STARTUP\]/,
  /^Loaded cached credentials/,
];

export function cleanStderr(stderr: string): string {
  return stderr
    .split('\n')
    .filter((line) => !NOISE.some((pattern) => pattern.test(line)))
    .join('\n')
    .trim();
}

/** The HTTP status behind an API error: from the error JSON, the stderr dump, or the exit code (status mod 256). */
export function httpStatusOf(outcome: ProcessOutcome): number | undefined {
  const message = outcome.resultError?.message ?? '';
  const fromJson =
    /"code"\s*:\s*(\d{3})/.exec(message) ??
    /\bstatus:\s*(\d{3})\b/.exec(outcome.stderr) ??
    /\bcode:\s*(\d{3})\b/.exec(outcome.stderr);
  if (fromJson) return Number(fromJson[1]);
  // The CLI exits with the HTTP status mod 256 after an API error (400→144, 429→173, 500→244).
  if (outcome.resultError && outcome.exitCode !== null && outcome.exitCode >= 144 && outcome.exitCode <= 255)
    return outcome.exitCode + 256;
  return undefined;
}

/** Resume failures: the CLI has no session with that id for this folder. */
export function isResumeFailure(outcome: ProcessOutcome): boolean {
  return /Error resuming session|Invalid session identifier|No previous sessions found/.test(outcome.stderr);
}

export function describeCliFailure(
  outcome: ProcessOutcome,
  context: { backend: string; model: string; endpoint: string },
): BackendFailure {
  const base = { backend: context.backend };
  const detail = tail(outcome.resultError?.message ?? outcome.stderr, 2000) || undefined;
  const withDetail = detail ? { detail } : {};
  if (outcome.spawnError) {
    return {
      ...base,
      code: 'PROCESS_FAILED',
      message: `The Gemini CLI could not be started: ${outcome.spawnError.message}.`,
      advice: 'Check that Node.js and @google/gemini-cli are installed (npm install @google/gemini-cli@0.61.0).',
      retryable: false,
    };
  }
  if (isResumeFailure(outcome)) {
    return {
      ...base,
      ...withDetail,
      code: 'NATIVE_RESUME_FAILED',
      message: "The Gemini CLI could not resume the session: it is not in the CLI's storage for this folder.",
      advice: "Restore the session's saved transcript (Parley keeps it) and try again, or continue in a new session.",
      retryable: false,
    };
  }
  const status = httpStatusOf(outcome);
  if (outcome.resultError && status !== undefined) {
    const withStatus = { ...withDetail, status };
    if (status === 429) {
      return {
        ...base,
        ...withStatus,
        code: 'RATE_LIMITED',
        message: `${context.endpoint} is rate limiting requests for ${context.model} (HTTP 429).`,
        advice: 'Wait a moment and send the message again, or check the API key’s quota.',
        retryable: true,
      };
    }
    if (status >= 500) {
      return {
        ...base,
        ...withStatus,
        code: 'SERVER_ERROR',
        message: `${context.endpoint} failed with HTTP ${status} while answering with ${context.model}.`,
        advice: 'This is on the server side: send the message again in a moment.',
        retryable: true,
      };
    }
    if (status === 401 || status === 403) {
      return {
        ...base,
        ...withStatus,
        code: 'AUTHENTICATION_FAILED',
        message: `${context.endpoint} refused the API key (HTTP ${status}).`,
        advice: 'Set GEMINI_API_KEY to a valid key.',
        retryable: false,
      };
    }
    if (status === 404) {
      return {
        ...base,
        ...withStatus,
        code: 'MODEL_NOT_FOUND',
        message: `${context.endpoint} does not know model "${context.model}" (HTTP 404).`,
        advice: 'Check the model name, and GOOGLE_GEMINI_BASE_URL if you set it.',
        retryable: false,
      };
    }
    return {
      ...base,
      ...withStatus,
      code: 'BAD_REQUEST',
      message: `${context.endpoint} rejected the request (HTTP ${status}).`,
      advice: 'Check the model name and the prompt; the server said what it did not accept below.',
      retryable: false,
    };
  }
  if (outcome.resultError) {
    const network = /fetch failed|ECONNREFUSED|ECONNRESET|socket hang up|ENOTFOUND|terminated/i.test(
      `${outcome.resultError.message ?? ''}\n${outcome.stderr}`,
    );
    return {
      ...base,
      ...withDetail,
      code: network ? 'CONNECTION_FAILED' : 'UNKNOWN',
      message: network
        ? `The Gemini CLI could not reach ${context.endpoint}.`
        : `The Gemini CLI reported an error: ${outcome.resultError.message ?? outcome.resultError.type ?? 'unknown'}.`,
      advice: network
        ? 'Check the network, and GOOGLE_GEMINI_BASE_URL if you set it, then send the message again.'
        : 'Send the message again; if it keeps failing, run the CLI by hand to see more.',
      retryable: network,
    };
  }
  if (outcome.exitCode === 41) {
    return {
      ...base,
      ...withDetail,
      code: 'AUTHENTICATION_FAILED',
      message: 'The Gemini CLI rejected its authentication settings (exit 41).',
      advice: 'Set GEMINI_API_KEY; Parley selects API-key authentication in the CLI settings it manages.',
      retryable: false,
    };
  }
  const how = outcome.signal
    ? `was killed by ${outcome.signal}`
    : outcome.exitCode === 0
      ? 'ended without a result'
      : `exited with code ${outcome.exitCode}`;
  return {
    ...base,
    ...withDetail,
    code: 'PROCESS_FAILED',
    message: `The Gemini CLI ${how}.`,
    advice: 'Send the message again; if it keeps failing, the last lines of its error output below say why.',
    retryable: true,
  };
}
