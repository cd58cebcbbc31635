import type { SDKUserMessage } from '@anthropic-ai/claude-agent-sdk';

/**
 * The prompt of a running query as an async iterable (the SDK's streaming input): the first
 * message, then whatever `inject` pushes while the turn runs. Closing it lets the CLI exit once it
 * has answered everything already pushed.
 */
export class InputChannel implements AsyncIterable<SDKUserMessage> {
  private readonly queue: SDKUserMessage[] = [];
  private waiter: (() => void) | undefined;
  private closed = false;

  get isClosed(): boolean {
    return this.closed;
  }

  /** False when the channel is closed: the message was not delivered. */
  push(text: string): boolean {
    if (this.closed) return false;
    this.queue.push({ type: 'user', message: { role: 'user', content: text }, parent_tool_use_id: null });
    this.wake();
    return true;
  }

  close(): void {
    this.closed = true;
    this.wake();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<SDKUserMessage> {
    for (;;) {
      const next = this.queue.shift();
      if (next) {
        yield next;
        continue;
      }
      if (this.closed) return;
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }
}
