import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { CODEX_CLI_PACKAGE } from './sdk-loader.js';

/**
 * Where the Codex CLI binary of the installed @openai/codex platform package is, found the way
 * @openai/codex-sdk finds it (the SDK does not export its finder): `vendor/<target>/bin/codex`,
 * with `codex-path/` (its `rg`) to put first on PATH. The app-server path spawns the binary itself.
 */
export interface CodexBinary {
  executablePath: string;
  /** Folders to put before PATH (the bundled ripgrep). */
  pathDirs: string[];
}

const PLATFORM_PACKAGES: Record<string, string> = {
  'x86_64-unknown-linux-musl': '@openai/codex-linux-x64',
  'aarch64-unknown-linux-musl': '@openai/codex-linux-arm64',
  'x86_64-apple-darwin': '@openai/codex-darwin-x64',
  'aarch64-apple-darwin': '@openai/codex-darwin-arm64',
  'x86_64-pc-windows-msvc': '@openai/codex-win32-x64',
  'aarch64-pc-windows-msvc': '@openai/codex-win32-arm64',
};

function targetTriple(): string | undefined {
  const arch = process.arch === 'x64' ? 'x86_64' : process.arch === 'arm64' ? 'aarch64' : undefined;
  if (!arch) return undefined;
  if (process.platform === 'linux' || process.platform === 'android') return `${arch}-unknown-linux-musl`;
  if (process.platform === 'darwin') return `${arch}-apple-darwin`;
  if (process.platform === 'win32') return `${arch}-pc-windows-msvc`;
  return undefined;
}

const isFile = (path: string): boolean => {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
};
const isDirectory = (path: string): boolean => {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
};

/** The binary of the installed platform package; throws, saying what is missing, when there is none. */
export function findCodexBinary(): CodexBinary {
  const triple = targetTriple();
  const platformPackage = triple ? PLATFORM_PACKAGES[triple] : undefined;
  if (!triple || !platformPackage)
    throw new Error(`Codex has no binary for this platform (${process.platform} ${process.arch}).`);
  let root: string;
  try {
    const require = createRequire(import.meta.url);
    const codexRequire = createRequire(require.resolve(`${CODEX_CLI_PACKAGE}/package.json`));
    root = join(dirname(codexRequire.resolve(`${platformPackage}/package.json`)), 'vendor', triple);
  } catch {
    throw new Error(`${CODEX_CLI_PACKAGE} or its platform package ${platformPackage} is not installed.`);
  }
  const name = process.platform === 'win32' ? 'codex.exe' : 'codex';
  const current = join(root, 'bin', name);
  if (isFile(current)) return { executablePath: current, pathDirs: [join(root, 'codex-path')].filter(isDirectory) };
  const legacy = join(root, 'codex', name);
  if (isFile(legacy)) return { executablePath: legacy, pathDirs: [join(root, 'path')].filter(isDirectory) };
  throw new Error(`${platformPackage} has no Codex binary under ${root}.`);
}
