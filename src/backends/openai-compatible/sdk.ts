import type * as OpenAiModule from 'openai';
import { lazyModule } from '../lazy-module.js';

/** The `openai` package, loaded by the first request (see lazy-module.ts). */
export const openAiSdk = lazyModule<typeof OpenAiModule>(() => import('openai'));
