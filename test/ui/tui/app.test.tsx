import './terminal-env.js';
import { afterEach, describe, expect, it } from 'vitest';
import { renderApp, type AppRig } from './app-rig.js';
import { loadRecording, RecordedPeer } from './recorded-peer.js';

const recording = loadRecording();
let rig: AppRig | undefined;
afterEach(() => rig?.stop());

describe('the TUI on a recorded draft session', () => {
  it('shows the title bar without a draft once connected', async () => {
    rig = renderApp(new RecordedPeer(recording));
    const frame = await rig.waitFor('Parley ● Connected | No draft | Agents: 0');
    expect(frame).toContain('Parley test rig');
  });

  it('creates a task, drafts, streams a turn with thinking, tools and a worker, and undrafts', async () => {
    rig = renderApp(new RecordedPeer(recording));
    await rig.waitFor('Connected | No draft');
    await rig.type('/task new Demo');
    await rig.waitFor('Created task demo ("Demo") in project demo-project; it is the active task.');
    await rig.type('/draft product-analyst');
    await rig.waitFor('Parley ● Connected | Draft: product-analyst | Context: 0% | Turns: 0 | $0.00');
    await rig.type('Please add a hello.txt greeting file');
    const frame = await rig.waitFor('Turns: 1 | $0.23');
    expect(frame).toContain('❯ Please add a hello.txt greeting file');
    expect(frame).toContain('✻ Thought (16 words · Ctrl+O shows thinking)');
    expect(frame).not.toContain('A developer worker can write it');
    expect(frame).toMatch(/✓ draft_agent\(role: "dev", prompt: "Write hello.txt with a friendly greeting."\)/);
    expect(frame).toMatch(/⎿ \{ "agentId": "dev-[0-9a-f]+", "status": "running" \}/);
    expect(frame).toMatch(/⎇ ✓ dev worker · done in \d+s · \$0\.04 · Write hello.txt/);
    expect(frame).toContain('⎿ Wrote hello.txt (19 bytes).');
    expect(frame).toContain('A dev worker is on it. Should the greeting be formal or casual?');
    expect(frame).toContain('Context: 31%');
  });
});
