import { createMemoryRunStore } from '../../../src/store/index.js';
import { runRunStoreConformance } from './conformance.js';

runRunStoreConformance({
  name: 'memory run store',
  create: async () => createMemoryRunStore(),
  destroy: async (store) => store.close(),
});
