import { context as otelContext, trace, type Attributes, type Context } from '@opentelemetry/api';
import { inSpan } from '../telemetry/index.js';

/**
 * Where a harness run's spans go: its `invoke_workflow` span, the phases and `waitForUser` waits
 * under it, and the agents' turns under the phase they run in. The workflow is user code that
 * passes no trace context around, so the run keeps its open spans itself (newest last) and hands
 * the newest one on as the parent. That needs no context manager. A process that registered one
 * (a library user's AsyncLocalStorage) knows more exactly which phase a piece of code runs in, as
 * when phases run in parallel: its active context wins when it holds a span.
 */
export class RunTrace {
  private readonly open: Context[] = [];

  /** The parent for a span or an agent turn starting now; undefined outside the run's span. */
  parent(): Context | undefined {
    const active = otelContext.active();
    if (trace.getSpan(active) !== undefined) return active;
    return this.open.at(-1);
  }

  /** Runs `fn` inside a span of the run (see `inSpan`), open for the spans and turns `fn` starts. */
  span<T>(name: string, attributes: Attributes, fn: () => Promise<T>): Promise<T> {
    return inSpan(
      name,
      attributes,
      async (_span, context) => {
        this.open.push(context);
        try {
          return await fn();
        } finally {
          this.open.splice(this.open.lastIndexOf(context), 1);
        }
      },
      this.parent(),
    );
  }
}
