/**
 * Vitest's setup file (vitest.config.ts), run in each test file's worker before the file: the bounds
 * of waiting, set for a two-core machine whose cores other processes may keep busy. A bound is only
 * where a test gives up; what a test waits on returns as soon as it holds, so a passing test is not
 * slower, and a failing one still fails, with its own message, before the test's timeout.
 */
import { expect, vi } from 'vitest';
import { isEndToEnd } from './heavy-first-sequencer.js';

/** How long `vi.waitFor` and `vi.waitUntil` wait on a condition unless a test says otherwise (Vitest's is 1 s). */
export const PATIENT_WAIT_MS = 20_000;

/**
 * The default timeout of a test and a hook in an end-to-end file (30 s elsewhere). Such a test
 * starts processes (the CLI, a server, a real Claude Code or Gemini CLI, PostgreSQL, Chromium), each
 * one or a few seconds of CPU; with both cores busy, a test of five starts can take a minute.
 */
export const END_TO_END_TIMEOUT_MS = 120_000;

if (isEndToEnd(expect.getState().testPath ?? '')) {
  vi.setConfig({ testTimeout: END_TO_END_TIMEOUT_MS, hookTimeout: END_TO_END_TIMEOUT_MS });
}

// vi.waitFor and vi.waitUntil poll a condition that an event makes true (a notification arrives, a
// process writes a file). One second is less than a server process, a WebSocket round trip or a
// garbage collection can take on a busy machine. (`expect.poll` takes the same bound from vitest.config.ts.)
type WaitOptions = number | { timeout?: number; interval?: number } | undefined;
const patient = (options: WaitOptions) =>
  typeof options === 'number' ? { timeout: options } : { timeout: PATIENT_WAIT_MS, ...options };
const waitFor = vi.waitFor.bind(vi);
const waitUntil = vi.waitUntil.bind(vi);
vi.waitFor = ((callback, options?: WaitOptions) => waitFor(callback, patient(options))) as typeof vi.waitFor;
vi.waitUntil = ((callback, options?: WaitOptions) => waitUntil(callback, patient(options))) as typeof vi.waitUntil;
