import './terminal-env.js';
import { EventEmitter } from 'node:events';
import { render } from 'ink';
import { afterEach, describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../../src/conversation/index.js';
import { ProtocolClient } from '../../../src/protocol/index.js';
import { App } from '../../../src/ui/tui/index.js';
import { flat, plain } from './app-rig.js';
import { loadRecording, RecordedPeer } from './recorded-peer.js';

/** A terminal as Ink sees it: a TTY of 100×30 that keeps every write. */
class Terminal extends EventEmitter {
  readonly columns = 100;
  readonly rows = 30;
  readonly isTTY = true;
  readonly writes: string[] = [];
  write(chunk: string | Uint8Array): boolean {
    this.writes.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return true;
  }
}

class Keyboard extends EventEmitter {
  readonly isTTY = true;
  setRawMode(): this {
    return this;
  }
  setEncoding(): this {
    return this;
  }
  read(): null {
    return null;
  }
  resume(): this {
    return this;
  }
  pause(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }
}

const recording = loadRecording();
const activeStatus = (
  recording.frames.find(
    (frame) =>
      'response' in frame && frame.response === 'get_draft_status' && (frame.result as { active: boolean }).active,
  ) as { result: { session: { sessionId: string } } }
).result;
const sessionId = activeStatus.session.sessionId;
const at = Date.parse('2026-11-21T07:00:00Z');

let stop: (() => void) | undefined;
afterEach(() => stop?.());

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The app in a real (non-debug) Ink render on a draft whose log holds `blocks` finished messages. */
function open(blocks: number): { terminal: Terminal; peer: RecordedPeer; screen: () => string } {
  const peer = new RecordedPeer(recording, { autoplay: false });
  peer.handlers.set('get_draft_status', () => activeStatus);
  for (let seq = 0; seq < blocks; seq++) {
    peer.append({
      sessionId,
      conversationId: 'main',
      seq,
      at,
      type: 'block_complete',
      block: {
        id: `old-${seq}`,
        type: seq % 2 === 0 ? 'user_message' : 'assistant_text',
        content: `history line ${seq}`,
        createdAt: at,
      },
    } as StreamEvent);
  }
  const terminal = new Terminal();
  const client = new ProtocolClient({ transport: peer.factory, onError: () => {} });
  const instance = render(<App client={client} onExit={() => {}} clock={() => at} historyLimit={10_000} />, {
    stdout: terminal as unknown as NodeJS.WriteStream,
    stdin: new Keyboard() as unknown as NodeJS.ReadStream,
    debug: false,
    exitOnCtrlC: false,
    patchConsole: false,
  });
  stop = () => {
    instance.unmount();
    client.close();
  };
  return { terminal, peer, screen: () => plain(terminal.writes.join('')) };
}

function stream(peer: RecordedPeer, event: StreamEvent): void {
  peer.notify('channel_message', { channelId: 'tui-demo', sessionId, event });
}

describe('finished history', () => {
  it('is written once into the scrollback; streaming a block writes only the live area', async () => {
    const { terminal, peer, screen } = open(300);
    await until(
      () => screen().includes('history line 299') && screen().includes('Draft: product-analyst'),
      'the history and the title bar',
    );
    expect(screen().split('history line 17\n').length - 1).toBe(1);
    const mark = terminal.writes.length;
    stream(peer, {
      sessionId,
      conversationId: 'main',
      seq: 300,
      at,
      type: 'block_start',
      block: { id: 'live', type: 'assistant_text', content: '', createdAt: at },
    });
    for (let index = 0; index < 20; index++) {
      stream(peer, {
        sessionId,
        conversationId: 'main',
        seq: 301 + index,
        at,
        type: 'text_delta',
        blockId: 'live',
        delta: `word${index} `,
      });
      await until(() => flat(plain(terminal.writes.slice(mark).join(''))).includes(`word${index} ▍`), `delta ${index}`);
    }
    const streamed = plain(terminal.writes.slice(mark).join(''));
    expect(streamed).not.toContain('history line');
    stream(peer, {
      sessionId,
      conversationId: 'main',
      seq: 321,
      at,
      type: 'block_complete',
      block: { id: 'live', type: 'assistant_text', content: 'the finished answer', createdAt: at },
    });
    await until(
      () => plain(terminal.writes.slice(mark).join('')).includes('the finished answer'),
      'the finished block',
    );
    const after = plain(terminal.writes.slice(mark).join(''));
    expect(after.split('the finished answer').length - 1).toBe(1);
    expect(after).not.toContain('history line');
  });

  it('keeps the live area shorter than the screen, so Ink never clears and redraws the whole history', async () => {
    const { terminal, peer, screen } = open(50);
    await until(
      () => screen().includes('history line 49') && screen().includes('Draft: product-analyst'),
      'the history',
    );
    const mark = terminal.writes.length;
    stream(peer, {
      sessionId,
      conversationId: 'main',
      seq: 50,
      at,
      type: 'block_start',
      block: { id: 'long', type: 'assistant_text', content: '', createdAt: at },
    });
    for (let line = 0; line < 60; line++)
      stream(peer, {
        sessionId,
        conversationId: 'main',
        seq: 51 + line,
        at,
        type: 'text_delta',
        blockId: 'long',
        delta: `line ${line} of a long answer\n`,
      });
    await until(
      () => plain(terminal.writes.slice(mark).join('')).includes('line 59 of a long answer'),
      'the end of the long answer',
    );
    const frames = terminal.writes.slice(mark);
    expect(frames.some((chunk) => chunk.includes('\u001b[2J'))).toBe(false);
    for (const chunk of frames) expect(chunk.split('\n').length).toBeLessThan(terminal.rows);
    const last = frames.filter((chunk) => chunk.includes('Parley')).at(-1) ?? '';
    expect(plain(last)).toMatch(/… \d+ more lines above[\s\S]*line 59 of a long answer/);
  });
});
