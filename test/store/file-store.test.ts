import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFileStore, type SessionStore, type StoreWarning } from '../../src/store/index.js';
import { runStoreConformance } from './conformance.js';

const folders = new WeakMap<SessionStore, string>();

runStoreConformance({
  name: 'file store',
  create: async () => {
    const dataDir = await fs.mkdtemp(join(tmpdir(), 'parley-file-store-'));
    const warnings: StoreWarning[] = [];
    const store = await createFileStore({ dataDir, onWarning: (warning) => warnings.push(warning) });
    folders.set(store, dataDir);
    return store;
  },
  destroy: async (store) => {
    await store.close();
    await fs.rm(folders.get(store)!, { recursive: true, force: true });
  },
});
