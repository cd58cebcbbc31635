import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * A program from the system's packages that some end-to-end tests need (tmux, Chromium, PostgreSQL).
 *
 * On a machine with Node alone, `npm test` must still pass and say what it left out; in CI
 * (`CI=true`, where `.ci/run` installs every part) a missing part is a failure, never a silent skip.
 */
export interface SystemPart {
  /** What the tests need, as a person would say it: "tmux", "Chromium". */
  name: string;
  /** What the tests are for, to finish the sentence "skipped …". */
  purpose: string;
  /** The command that installs it, e.g. `apt-get install -y tmux`. */
  install: string;
  /** Another way to provide it, said after the install command. */
  alternative?: string;
  /** Whether it is present on this machine. */
  present: () => boolean;
}

export interface SystemPartCheck {
  /** True when the tests that need the part must be skipped (absent, outside CI). */
  skip: boolean;
  /** Why, in one line; empty when the part is present. */
  reason: string;
}

export function inCi(environment: NodeJS.ProcessEnv = process.env): boolean {
  const value = environment['CI'];
  return value !== undefined && value !== '' && value !== '0' && value.toLowerCase() !== 'false';
}

/**
 * Checks a part once, at a test file's load. Absent outside CI: prints one visible line that says
 * what to install and returns `skip: true` (use with `describe.skipIf`). Absent in CI: throws, so
 * the file fails.
 */
export function checkSystemPart(part: SystemPart, environment: NodeJS.ProcessEnv = process.env): SystemPartCheck {
  if (part.present()) return { skip: false, reason: '' };
  const reason = `${part.name} is not installed: skipped ${part.purpose}. Install it with \`${part.install}\` (.ci/run does)${part.alternative ? `, ${part.alternative}` : ''}.`;
  if (inCi(environment)) throw new Error(`${reason} In CI (CI=true) the tests that need ${part.name} must run.`);
  console.warn(`SKIPPED: ${reason}`);
  return { skip: true, reason };
}

/** True when `command args…` runs and exits 0. */
export function commandRuns(command: string, args: string[] = ['--version']): boolean {
  try {
    execFileSync(command, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export const TMUX: SystemPart = {
  name: 'tmux',
  purpose: "the terminal UI's end-to-end tests",
  install: 'apt-get install -y tmux',
  present: () => commandRuns('tmux', ['-V']),
};

/** Debian's Chromium, or another named by PARLEY_CHROMIUM. */
export const CHROMIUM_PATH = process.env['PARLEY_CHROMIUM'] ?? '/usr/bin/chromium';

export const CHROMIUM: SystemPart = {
  name: 'Chromium',
  purpose: "the web UI's end-to-end tests",
  install: 'apt-get install -y chromium',
  alternative: 'or set PARLEY_CHROMIUM to another Chromium',
  present: () => existsSync(CHROMIUM_PATH),
};
