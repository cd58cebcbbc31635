import { createMemoryDraftStore } from '../../../src/store/index.js';
import { runDraftStoreConformance } from './conformance.js';

runDraftStoreConformance({
  name: 'memory draft store',
  create: async () =>
    createMemoryDraftStore({ home: { name: 'home', path: '/projects/home', dataDir: '/projects/home/.parley' } }),
  destroy: async (store) => store.close(),
});
