import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { step } from '../../../src/backends/index.js';
import { coreRunServiceFactory, serveRuns } from '../../../src/cli/run-service-wiring.js';
import { createMemoryScheduleStore } from '../../../src/store/index.js';
import { SCREENSHOTS } from './web-harness.js';
import { openConnected, useWebHarness } from './web-test-hooks.js';

/**
 * The web UI's Schedules view in headless Chromium, against a server with a schedule store, the
 * real durable-run core and a scheduler clock the test sets: its timer never fires by itself, the
 * test moves the time and calls `tick()`, so a firing happens exactly when the test says, without
 * sleeps. The schedule is added, fired and removed over the protocol from a second client, and the
 * page must follow each change; pause and resume are pressed in the page and checked on the server.
 */

const repo = resolve(import.meta.dirname, '..', '..', '..');

/** A clock the test sets; the scheduler's timer never fires by itself (the test calls `tick()`). */
/** How the page shows an interval schedule's next firing: in the browser's zone, the zone named. */
const SHOWN = {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  timeZoneName: 'short',
} as const;

function schedulerClock(startIso: string) {
  let now = Date.parse(startIso);
  return {
    now: () => now,
    setTimeout: () => undefined,
    clearTimeout: () => undefined,
    set: (iso: string) => void (now = Date.parse(iso)),
  };
}

const clock = schedulerClock('2026-01-10T12:00:00.000Z');
const store = createMemoryScheduleStore();
const web = useWebHarness({
  scheduleStore: store,
  schedulerClock: clock,
  createRunService: serveRuns(coreRunServiceFactory, () => undefined),
});

describe.skipIf(web.part.skip)('the Schedules view of the web UI', () => {
  it('shows a schedule added elsewhere with its next firing, its last run after a firing with a working link, pauses and resumes it, and drops it when removed elsewhere', async () => {
    const harness = web.harness();
    // A workflow without agents: its runs complete at once.
    await mkdir(join(harness.root, 'workflows'), { recursive: true });
    await writeFile(
      join(harness.root, 'workflows', 'nightly.ts'),
      `import { defineHarness } from '${pathToFileURL(join(repo, 'src', 'index.ts')).href}';\n` +
        `export default defineHarness({ name: 'nightly', agents: {}, async run(context) { return { echoed: context.input }; } });\n`,
    );

    const page = await openConnected(harness, 'schedules-failure');
    await page.locator('[data-testid="schedules-button"]').click();
    const view = page.locator('[data-testid="schedules-view"]');
    await view.locator('p.muted', { hasText: 'No schedules yet' }).waitFor();

    // Added from another client while the view is open: it appears with its next firing.
    const other = await harness.client();
    const schedule = await other.addSchedule({
      name: 'hourly check',
      everySeconds: 3600,
      target: { kind: 'workflow', workflow: 'workflows/nightly.ts', input: { depth: 1 } },
    });
    expect(schedule.nextFireAt).toBe('2026-01-10T13:00:00.000Z');
    const card = view.locator(`[data-testid="schedule"][data-schedule-id="${schedule.id}"]`);
    await card.waitFor();
    expect(await card.locator('.schedule-part').first().innerText()).toBe(
      'hourly check · every 3600 s · runs workflows/nightly.ts',
    );
    // The page shows the time in the browser's own locale and zone; it must be this instant's.
    const shownNext = await page.evaluate(([iso, options]) => new Date(iso).toLocaleString(undefined, options), [
      schedule.nextFireAt!,
      SHOWN,
    ] as const);
    expect(await card.locator('[data-testid="schedule-next"]').innerText()).toBe(`next: ${shownNext}`);
    expect(await card.locator('[data-testid="schedule-last"]').innerText()).toBe('not fired yet');

    // It fires: the card shows the firing's outcome and the run it started, and the next firing moves on.
    clock.set('2026-01-10T13:00:01.000Z');
    await harness.server.scheduler!.tick();
    const { schedule: fired } = await other.request('get_schedule', { scheduleId: schedule.id });
    const runId = fired.last!.runId!;
    expect(fired.last).toMatchObject({ outcome: 'started', fireAt: '2026-01-10T13:00:00.000Z' });
    const runLink = card.locator('[data-testid="schedule-last"] a', { hasText: runId });
    await runLink.waitFor();
    expect(await card.locator('[data-testid="schedule-last"]').innerText()).toBe(`last: started ${runId}`);
    expect(await runLink.getAttribute('href')).toBe(`#run=${encodeURIComponent(runId)}`);
    const shownNextAfter = await page.evaluate(([iso, options]) => new Date(iso).toLocaleString(undefined, options), [
      fired.nextFireAt!,
      SHOWN,
    ] as const);
    expect(fired.nextFireAt).toBe('2026-01-10T14:00:00.000Z');
    await card.locator('[data-testid="schedule-next"]', { hasText: `next: ${shownNextAfter}` }).waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, 'schedules-fired.png') });
    // Each part on a line of its own, not run together into one.
    const nextBox = (await card.locator('[data-testid="schedule-next"]').boundingBox())!;
    const lastBox = (await card.locator('[data-testid="schedule-last"]').boundingBox())!;
    expect(lastBox.y).toBeGreaterThanOrEqual(nextBox.y + nextBox.height);

    // The link opens the Runs view at that run, which completes with the schedule's input.
    await runLink.click();
    await view.waitFor({ state: 'hidden' });
    const runCard = page.locator(`[data-testid="runs-view"] [data-testid="run"][data-run-id="${runId}"]`);
    await runCard.waitFor();
    await runCard.locator('[data-testid="run-status"]', { hasText: 'complete' }).waitFor();
    expect(await runCard.locator('.run-result').innerText()).toContain('"depth": 1');
    expect(await runCard.evaluate((element) => element.classList.contains('focused'))).toBe(true);

    // Pause from the page: the server's schedule is paused, and the card says so.
    await page.locator('[data-testid="schedules-button"]').click();
    await view.waitFor();
    const toggle = card.locator('[data-testid="schedule-toggle"]');
    expect(await toggle.innerText()).toBe('Pause');
    await toggle.click();
    await card.locator('[data-testid="schedule-next"]', { hasText: 'paused' }).waitFor();
    expect(await toggle.innerText()).toBe('Resume');
    expect((await other.request('get_schedule', { scheduleId: schedule.id })).schedule.paused).toBe(true);

    // Resume from the page: running again on the server, with a next firing shown.
    await toggle.click();
    await card.locator('[data-testid="schedule-toggle"]', { hasText: 'Pause' }).waitFor();
    const resumed = (await other.request('get_schedule', { scheduleId: schedule.id })).schedule;
    expect(resumed.paused).toBe(false);
    const shownResumed = await page.evaluate(([iso, options]) => new Date(iso).toLocaleString(undefined, options), [
      resumed.nextFireAt!,
      SHOWN,
    ] as const);
    expect(await card.locator('[data-testid="schedule-next"]').innerText()).toBe(`next: ${shownResumed}`);
    // The last result is kept across the pause.
    expect(await card.locator('[data-testid="schedule-last"]').innerText()).toBe(`last: started ${runId}`);

    // Removed from the other client: the card goes, and the view says there are none.
    await other.removeSchedule(schedule.id);
    await card.waitFor({ state: 'detached' });
    await view.locator('p.muted', { hasText: 'No schedules yet' }).waitFor();
    expect(await other.listSchedules()).toEqual([]);
    await page.context().close();
  });

  it("a draft schedule's last result links to the session its prompt went to, which opens with the reply", async () => {
    const harness = web.harness();
    const page = await openConnected(harness, 'schedules-session-failure');
    await page.locator('[data-testid="schedules-button"]').click();
    const view = page.locator('[data-testid="schedules-view"]');
    const other = await harness.client();
    harness.backend.enqueue([step.text('This week: two fixes landed.')]);
    const schedule = await other.addSchedule({
      name: 'weekly summary',
      everySeconds: 7 * 24 * 3600,
      target: { kind: 'draft', prompt: 'Summarize the week.', project: harness.project, role: 'dev' },
    });
    const card = view.locator(`[data-testid="schedule"][data-schedule-id="${schedule.id}"]`);
    await card.locator('.schedule-part', { hasText: `prompts dev in ${harness.project}` }).waitFor();

    clock.set(schedule.nextFireAt!);
    await harness.server.scheduler!.tick();
    const { schedule: fired } = await other.request('get_schedule', { scheduleId: schedule.id });
    const sessionId = fired.last!.sessionId!;
    expect(fired.last).toMatchObject({ outcome: 'started' });
    const sessionLink = card.locator('[data-testid="schedule-last"] a', { hasText: sessionId });
    await sessionLink.waitFor();
    expect(await sessionLink.getAttribute('href')).toBe(`#session=${encodeURIComponent(sessionId)}`);

    await sessionLink.click();
    await view.waitFor({ state: 'hidden' });
    const blocks = page.locator('[data-testid="blocks"]');
    await blocks.locator('[data-block-type="user_message"]', { hasText: 'Summarize the week.' }).waitFor();
    await blocks.locator('[data-block-type="assistant_text"]', { hasText: 'This week: two fixes landed.' }).waitFor();
    await harness.server.drafts.settled({ channelId: `schedule-${schedule.id}` });
    await other.removeSchedule(schedule.id);
    await page.context().close();
  });

  it('a pause the server refuses says why, and a schedule gone from the store behind this server leaves the view', async () => {
    const harness = web.harness();
    const page = await openConnected(harness, 'schedules-refused-failure');
    await page.locator('[data-testid="schedules-button"]').click();
    const view = page.locator('[data-testid="schedules-view"]');
    const other = await harness.client();
    const schedule = await other.addSchedule({
      name: 'gone soon',
      everySeconds: 600,
      target: { kind: 'workflow', workflow: 'workflows/nightly.ts' },
    });
    const card = view.locator(`[data-testid="schedule"][data-schedule-id="${schedule.id}"]`);
    await card.waitFor();
    // As another server on the same PostgreSQL removes it: straight from the store, unannounced here.
    expect(await store.removeSchedule(schedule.id)).toBe(true);
    await card.locator('[data-testid="schedule-toggle"]').click();
    const refusal = view.locator('[data-testid="schedules-error"]');
    await refusal.waitFor();
    expect(await refusal.innerText()).toMatch(new RegExp(`^Could not pause gone soon: .*${schedule.id}`));
    await card.waitFor({ state: 'detached' });
    await page.context().close();
  });

  it("a cron schedule's next firing is shown in its own time zone, named", async () => {
    const harness = web.harness();
    const page = await openConnected(harness, 'schedules-zone-failure');
    await page.locator('[data-testid="schedules-button"]').click();
    const other = await harness.client();
    const schedule = await other.addSchedule({
      name: 'tokyo morning',
      cron: '0 3 * * *',
      timeZone: 'Asia/Tokyo',
      target: { kind: 'workflow', workflow: 'workflows/nightly.ts' },
    });
    const card = page.locator(`[data-testid="schedule"][data-schedule-id="${schedule.id}"]`);
    await card.waitFor();
    expect(await card.locator('.schedule-part').first().innerText()).toContain('0 3 * * * (Asia/Tokyo)');
    // 03:00 in Tokyo, whatever zone the browser is in.
    expect(await card.locator('[data-testid="schedule-next"]').innerText()).toMatch(/^next: .*\b03:00\b.*GMT\+9$/);
    await other.removeSchedule(schedule.id);
    await page.context().close();
  });

  it("a firing that cannot start shows as failed with the server's error", async () => {
    const harness = web.harness();
    const page = await openConnected(harness, 'schedules-failed-failure');
    await page.locator('[data-testid="schedules-button"]').click();
    const other = await harness.client();
    const { sessionId } = await other.request('draft', { role: 'dev', project: harness.project, task: 'first-task' });
    const schedule = await other.addSchedule({
      name: 'poke',
      everySeconds: 60,
      target: { kind: 'session', sessionId, prompt: 'Still there?' },
    });
    const card = page.locator(`[data-testid="schedule"][data-schedule-id="${schedule.id}"]`);
    await card.locator('.schedule-part', { hasText: `prompts session ${sessionId}` }).waitFor();
    // The draft is closed before the firing: the prompt has nowhere to go.
    await other.request('undraft', {});
    clock.set(schedule.nextFireAt!);
    await harness.server.scheduler!.tick();
    const last = card.locator('[data-testid="schedule-last"]');
    await card.locator('[data-testid="schedule-last"]', { hasText: /^last: failed \(NO_ACTIVE_DRAFT: / }).waitFor();
    expect(await last.innerText()).toContain(`No draft runs session ${sessionId}`);
    expect(await last.locator('a').count()).toBe(0);
    await other.removeSchedule(schedule.id);
    await page.context().close();
  });
});
