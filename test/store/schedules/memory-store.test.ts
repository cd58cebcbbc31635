import { createMemoryScheduleStore } from '../../../src/store/index.js';
import { runScheduleStoreConformance } from './conformance.js';

runScheduleStoreConformance({
  name: 'memory schedule store',
  create: async () => createMemoryScheduleStore(),
  destroy: async (store) => store.close(),
});
