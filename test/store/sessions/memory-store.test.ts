import { createMemoryStore } from '../../../src/store/index.js';
import { runStoreConformance } from './conformance.js';

runStoreConformance({
  name: 'memory store',
  create: async () => createMemoryStore(),
  destroy: async (store) => store.close(),
});
