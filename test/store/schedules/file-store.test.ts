import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFileScheduleStore, type ScheduleStore } from '../../../src/store/index.js';
import { runScheduleStoreConformance } from './conformance.js';

const folders = new WeakMap<ScheduleStore, string>();

async function openIn(dataDir: string): Promise<ScheduleStore> {
  const store = await createFileScheduleStore({ dataDir });
  folders.set(store, dataDir);
  return store;
}

runScheduleStoreConformance({
  name: 'file schedule store',
  create: async () => openIn(await fs.mkdtemp(join(tmpdir(), 'parley-schedule-store-'))),
  reopen: async (store) => {
    await store.close();
    return openIn(folders.get(store)!);
  },
  destroy: async (store) => {
    await store.close();
    await fs.rm(folders.get(store)!, { recursive: true, force: true });
  },
});
