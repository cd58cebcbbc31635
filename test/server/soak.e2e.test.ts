import { describe, expect, it } from 'vitest';
import { runSoak } from '../../bench/soak.js';

describe('soak (short)', () => {
  it('50 drafts streaming at once, with connections dropped and resumed: no event lost or doubled', async () => {
    const report = await runSoak({
      durationMs: 3_000,
      drafts: 50,
      dropEveryMs: 300,
      sampleEveryMs: 1_000,
      stepsPerTurn: 3,
      pauseMs: 10,
    });
    expect(report.turns).toBeGreaterThanOrEqual(50);
    expect(report.drops).toBeGreaterThan(0);
    expect(report.lost).toBe(0);
    expect(report.doubled).toBe(0);
  }, 120_000);
});
