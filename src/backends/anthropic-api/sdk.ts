import type * as AnthropicModule from '@anthropic-ai/sdk';
import { lazyModule } from '../lazy-module.js';

/** `@anthropic-ai/sdk`, loaded by the first request (see lazy-module.ts). */
export const anthropicSdk = lazyModule<typeof AnthropicModule>(() => import('@anthropic-ai/sdk'));
