import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type * as CodexSdkModule from '@openai/codex-sdk';
import { ParleyError } from '../../conversation/index.js';

/**
 * The Codex SDK is an optional dependency (it runs the Codex CLI, a native binary of about 350 MB
 * that comes in a platform package). Parley loads it with a dynamic import on the first turn, so
 * Parley starts, and every other back end works, without it. Only types are imported statically.
 */
export type CodexSdk = typeof CodexSdkModule;

/** The versions Parley is built and tested against (package.json pins both to one, so one binary is installed). */
export const CODEX_SDK_VERSION = '0.163.0';
export const CODEX_SDK_PACKAGE = '@openai/codex-sdk';
export const CODEX_CLI_PACKAGE = '@openai/codex';

/** How to install the back end's packages, for error messages and `parley backends`. */
export const CODEX_INSTALL_COMMAND = `npm install --save-exact ${CODEX_SDK_PACKAGE}@${CODEX_SDK_VERSION} ${CODEX_CLI_PACKAGE}@${CODEX_SDK_VERSION}`;

/** The optional Codex SDK package is not installed; the message says how to install it. */
export class CodexNotInstalledError extends ParleyError {
  constructor(cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(
      'BACKEND_NOT_INSTALLED',
      `The codex back end needs ${CODEX_SDK_PACKAGE} and ${CODEX_CLI_PACKAGE}, which could not be loaded (${reason}). ` +
        `Install them with \`${CODEX_INSTALL_COMMAND}\` (not with --omit=optional: the CLI binary comes in an optional platform package), or choose another back end.`,
      { fault: 'user', cause, data: { package: CODEX_SDK_PACKAGE, version: CODEX_SDK_VERSION } },
    );
  }
}

export type CodexSdkLoader = () => Promise<CodexSdk>;

export const importCodexSdk: CodexSdkLoader = () => import('@openai/codex-sdk');

/** Loads once per loader; a failed load is retried next time (the user may have installed it since). */
export function cachedCodexLoader(load: CodexSdkLoader): () => Promise<CodexSdk> {
  let pending: Promise<CodexSdk> | undefined;
  return () => {
    pending ??= load().catch((error: unknown) => {
      pending = undefined;
      throw new CodexNotInstalledError(error);
    });
    return pending;
  };
}

/** True when the SDK and the CLI package can be found (without loading them). */
export function codexResolvable(): boolean {
  const require = createRequire(import.meta.url);
  // The SDK exports only an `import` entry, which `require.resolve` cannot see: look for its folder.
  const folders = require.resolve.paths(CODEX_SDK_PACKAGE) ?? [];
  if (!folders.some((folder) => existsSync(join(folder, CODEX_SDK_PACKAGE, 'package.json')))) return false;
  try {
    require.resolve(`${CODEX_CLI_PACKAGE}/package.json`);
    return true;
  } catch {
    return false;
  }
}
