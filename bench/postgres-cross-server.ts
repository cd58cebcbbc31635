/**
 * Cross-server delivery: two SessionManagers, each on its own PostgreSQL store instance
 * on one schema, as two `parley serve` would be. Manager A appends 1 event per millisecond
 * (1,000 events/s, paced by the clock); the time from each `appendEvents` call to its
 * `session:event` is measured on A itself (same server) and on B, which follows store changes
 * (NOTIFY wake-up, then a read of the log after the seq it holds).
 */
import { createSessionManager, type SessionManager } from '../src/sessions/index.js';
import { createPostgresStore } from '../src/store/index.js';
import { percentile } from './stats.js';

export interface DeliveryResult {
  events: number;
  sameServerP99: number;
  crossServerP99: number;
  sameServerP50: number;
  crossServerP50: number;
}

const RATE_PER_MS = 1;

export async function measureCrossServerDelivery(
  connectionString: string,
  schema: string,
  events = 3_000,
): Promise<DeliveryResult> {
  const storeA = await createPostgresStore({ connectionString, schema });
  const storeB = await createPostgresStore({ connectionString, schema });
  const managers: SessionManager[] = [];
  try {
    const managerA = await createSessionManager({ store: storeA, preloadTokenizer: false });
    const managerB = await createSessionManager({ store: storeB, preloadTokenizer: false });
    managers.push(managerA, managerB);
    const { sessionId } = await managerA.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
    await managerB.getEvents(sessionId); // cached on B, as a session a client follows is
    managerB.followStoreChanges({ followed: () => true });
    const sentAt = new Map<string, number>();
    const sameServer: number[] = [];
    const crossServer: number[] = [];
    let seenOnB = 0;
    let allSeen: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (allSeen = resolve));
    const latency = (samples: number[]) => (payload: { event: { type: string } & Record<string, unknown> }) => {
      const sent = sentAt.get(String(payload.event['delta']));
      if (sent !== undefined) samples.push(performance.now() - sent);
    };
    managerA.on('session:event', latency(sameServer));
    managerB.on('session:event', (payload) => {
      latency(crossServer)(payload);
      if (++seenOnB === events) allSeen();
    });
    const started = performance.now();
    const appends: Array<Promise<unknown>> = [];
    let issued = 0;
    while (issued < events) {
      const due = Math.min(events, Math.floor((performance.now() - started) * RATE_PER_MS) + 1);
      for (; issued < due; issued += 1) {
        const delta = `event ${issued} `;
        sentAt.set(delta, performance.now());
        appends.push(
          managerA.appendEvents(sessionId, [{ type: 'text_delta', conversationId: 'main', blockId: 'paced', delta }]),
        );
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(appends);
    await done;
    return {
      events,
      sameServerP50: percentile(sameServer, 50),
      sameServerP99: percentile(sameServer, 99),
      crossServerP50: percentile(crossServer, 50),
      crossServerP99: percentile(crossServer, 99),
    };
  } finally {
    for (const manager of managers) await manager.close();
    await storeA.close();
    await storeB.close();
  }
}
