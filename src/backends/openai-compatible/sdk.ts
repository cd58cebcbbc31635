import type * as OpenAiModule from 'openai';
import { lazyModule } from '../lazy-module.js';

/** The `openai` package (≈80 ms to import), loaded by the first request. */
export const openAiSdk = lazyModule<typeof OpenAiModule>(() => import('openai'));
