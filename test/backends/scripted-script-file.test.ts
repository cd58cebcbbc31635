import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createScriptedBackend, loadScriptFile, scriptedOptionsFromJson } from '../../src/backends/index.js';
import type { UnsequencedEvent } from '../../src/conversation/index.js';

const folders: string[] = [];
afterEach(async () => {
  for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
});

async function play(
  backend: ReturnType<typeof createScriptedBackend>,
  prompt: string,
  signal?: AbortSignal,
): Promise<UnsequencedEvent[]> {
  const events: UnsequencedEvent[] = [];
  for await (const event of backend.execute({ sessionId: 's', prompt, ...(signal ? { signal } : {}) }).events)
    events.push(event);
  return events;
}

const texts = (events: UnsequencedEvent[]) =>
  events.flatMap((event) =>
    event.type === 'block_complete' && event.block.type === 'assistant_text' ? [event.block.content] : [],
  );

describe('scripted back-end script files', () => {
  it("plays the file's turns in order, then its default turn", async () => {
    const folder = await mkdtemp(join(tmpdir(), 'parley-script-'));
    folders.push(folder);
    const path = join(folder, 'script.json');
    await writeFile(
      path,
      JSON.stringify({
        turns: [
          [
            { type: 'text', text: 'one' },
            { type: 'delay', ms: 1 },
            { type: 'text', text: 'two' },
          ],
        ],
        defaultTurn: [{ type: 'text', text: 'later' }],
      }),
    );
    const backend = createScriptedBackend(await loadScriptFile(path));
    expect(texts(await play(backend, 'a'))).toEqual(['one', 'two']);
    expect(texts(await play(backend, 'b'))).toEqual(['later']);
    expect(texts(await play(backend, 'c'))).toEqual(['later']);
  });

  it('a delay is cut short by an abort, and the turn ends as aborted', async () => {
    const backend = createScriptedBackend(
      scriptedOptionsFromJson({
        turns: [
          [
            { type: 'text', text: 'before' },
            { type: 'delay', ms: 3_600_000 },
            { type: 'text', text: 'after' },
          ],
        ],
      }),
    );
    const controller = new AbortController();
    const events: UnsequencedEvent[] = [];
    for await (const event of backend.execute({ sessionId: 's', prompt: 'x', signal: controller.signal }).events) {
      events.push(event);
      if (event.type === 'block_complete' && event.block.type === 'assistant_text') controller.abort();
    }
    expect(texts(events)).toEqual(['before']);
    expect(
      events.some(
        (event) =>
          event.type === 'block_complete' && event.block.type === 'system' && event.block.subtype === 'aborted',
      ),
    ).toBe(true);
  });

  it('a malformed script is refused with INVALID_SCRIPT naming the field', async () => {
    expect(() => scriptedOptionsFromJson({ turns: [[{ type: 'delay', ms: -1 }]] }, 'turns.json')).toThrow(
      /turns\.json.*turns\.0\.0/,
    );
    const folder = await mkdtemp(join(tmpdir(), 'parley-script-'));
    folders.push(folder);
    await writeFile(join(folder, 'bad.json'), '{ not json');
    await expect(loadScriptFile(join(folder, 'bad.json'))).rejects.toMatchObject({ code: 'INVALID_SCRIPT' });
    await expect(loadScriptFile(join(folder, 'missing.json'))).rejects.toMatchObject({ code: 'INVALID_SCRIPT' });
  });
});
