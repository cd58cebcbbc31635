import type * as AnthropicModule from '@anthropic-ai/sdk';
import { lazyModule } from '../lazy-module.js';

/** `@anthropic-ai/sdk` (≈160 ms to import), loaded by the first request. */
export const anthropicSdk = lazyModule<typeof AnthropicModule>(() => import('@anthropic-ai/sdk'));
