import { describe, expect, it } from 'vitest';
import { serveRuns } from '../../src/cli/run-service-wiring.js';
import type { RunServiceContext } from '../../src/server/index.js';
import { CODE_REVIEW, StandInRunService } from '../helpers/stand-in-run-service.js';

const context = {} as RunServiceContext;

describe("parley serve's run service wiring", () => {
  it('without a factory, runs stay off (the server answers RUNS_NOT_ENABLED)', () => {
    expect(serveRuns(undefined, () => undefined)).toBeUndefined();
  });

  it('makes the service and resumes every unfinished run before the server accepts connections, saying how many wait', async () => {
    const service = new StandInRunService({ review: CODE_REVIEW });
    await service.startRun({ workflow: 'review' });
    await service.startRun({ workflow: 'review' });
    const reports: string[] = [];
    const create = serveRuns(
      () => Promise.resolve(service),
      (line) => reports.push(line),
    )!;
    expect(await create(context)).toBe(service);
    expect(service.calls.map((call) => call.method)).toContain('recoverRuns');
    expect(reports).toEqual(['Resumed 2 unfinished run(s), 2 waiting for an answer (`parley runs`).']);
  });

  it('a recovery that fails closes the service and fails the start', async () => {
    const service = new StandInRunService({});
    service.recoverRuns = () => Promise.reject(new Error('the run store is unreadable'));
    const create = serveRuns(
      () => Promise.resolve(service),
      () => undefined,
    )!;
    await expect(create(context)).rejects.toThrow('the run store is unreadable');
    expect(service.closed).toBe(true);
  });
});
