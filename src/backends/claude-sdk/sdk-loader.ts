import type * as ClaudeAgentSdkModule from '@anthropic-ai/claude-agent-sdk';
import { ParleyError } from '../../conversation/index.js';

/**
 * The Claude Agent SDK is an optional dependency (it ships a native CLI of its own). Parley loads it
 * with a dynamic import on the first turn, so Parley starts, and every other back end works,
 * without it. Only types are imported statically, and they are erased at build time.
 */
export type ClaudeAgentSdk = typeof ClaudeAgentSdkModule;

/** The version Parley is built and tested against (package.json pins it). */
export const CLAUDE_AGENT_SDK_VERSION = '0.3.329';
export const CLAUDE_AGENT_SDK_PACKAGE = '@anthropic-ai/claude-agent-sdk';

/** The optional Claude Agent SDK package is not installed; the message says how to install it. */
export class ClaudeSdkNotInstalledError extends ParleyError {
  constructor(cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(
      'CLAUDE_SDK_NOT_INSTALLED',
      `The claude-sdk back end needs ${CLAUDE_AGENT_SDK_PACKAGE}, which could not be loaded (${reason}). ` +
        `Install it with \`npm install --save-exact ${CLAUDE_AGENT_SDK_PACKAGE}@${CLAUDE_AGENT_SDK_VERSION}\` ` +
        '(not with --omit=optional: the CLI binary comes in an optional platform package), or choose another back end.',
      { fault: 'user', cause, data: { package: CLAUDE_AGENT_SDK_PACKAGE, version: CLAUDE_AGENT_SDK_VERSION } },
    );
  }
}

export type SdkLoader = () => Promise<ClaudeAgentSdk>;

export const importClaudeAgentSdk: SdkLoader = () => import('@anthropic-ai/claude-agent-sdk');

/** Loads once per loader; a failed load is retried next time (the user may have installed it since). */
export function cachedLoader(load: SdkLoader): () => Promise<ClaudeAgentSdk> {
  let pending: Promise<ClaudeAgentSdk> | undefined;
  return () => {
    pending ??= load().catch((error: unknown) => {
      pending = undefined;
      throw new ClaudeSdkNotInstalledError(error);
    });
    return pending;
  };
}
