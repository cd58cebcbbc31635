import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ParleyError } from '../../conversation/index.js';

export const GEMINI_CLI_PACKAGE = '@google/gemini-cli';
export const GEMINI_CLI_VERSION = '0.61.0';

/** The optional Gemini CLI package is not installed; the message says how to install it. */
export class GeminiCliNotInstalledError extends ParleyError {
  constructor(cause?: unknown) {
    super(
      'BACKEND_NOT_INSTALLED',
      `The gemini-cli back end needs ${GEMINI_CLI_PACKAGE} ${GEMINI_CLI_VERSION}, an optional dependency that is not installed. ` +
        `Install it with: npm install ${GEMINI_CLI_PACKAGE}@${GEMINI_CLI_VERSION}`,
      { fault: 'user', cause, data: { package: GEMINI_CLI_PACKAGE, version: GEMINI_CLI_VERSION } },
    );
  }
}

/** The CLI's entry script, found through the installed package (its `bin.gemini`). */
export function locateGeminiCli(): { path: string; version: string } {
  const require = createRequire(import.meta.url);
  let manifestPath: string;
  try {
    manifestPath = require.resolve(`${GEMINI_CLI_PACKAGE}/package.json`);
  } catch (error) {
    throw new GeminiCliNotInstalledError(error);
  }
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as {
    version?: string;
    bin?: string | Record<string, string>;
  };
  const bin = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin?.['gemini'];
  if (!bin) throw new GeminiCliNotInstalledError(new Error(`${manifestPath} names no gemini binary`));
  return { path: join(dirname(manifestPath), bin), version: manifest.version ?? 'unknown' };
}
