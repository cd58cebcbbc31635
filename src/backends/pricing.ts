import type { Usage } from '../conversation/index.js';
import type { ModelInfo, ModelPricing } from './agent-backend.js';

/**
 * Context windows and list prices of well-known models, for back ends whose provider reports no
 * cost (the OpenAI and Anthropic APIs report tokens only). US dollars per million tokens, the
 * providers' published standard-tier prices (no batch or priority discounts; Gemini 2.5 Pro at
 * its ≤200k-token tier). Prices change: users override or add models in the config file
 * (`models` in parley.config.json), and a model found nowhere has an unknown cost, never zero.
 */
export const PRICING_AS_OF = '2025-11';

function price(input: number, output: number, cacheRead?: number, cacheWrite?: number): ModelPricing {
  return {
    inputPerMillion: input,
    outputPerMillion: output,
    ...(cacheRead !== undefined ? { cacheReadPerMillion: cacheRead } : {}),
    ...(cacheWrite !== undefined ? { cacheWritePerMillion: cacheWrite } : {}),
  };
}

/** The models Parley knows the context window and prices of. */
export const KNOWN_MODELS: readonly ModelInfo[] = [
  // OpenAI
  { id: 'gpt-5', contextWindow: 400_000, maxOutputTokens: 128_000, pricing: price(1.25, 10, 0.125) },
  { id: 'gpt-5-codex', contextWindow: 400_000, maxOutputTokens: 128_000, pricing: price(1.25, 10, 0.125) },
  { id: 'gpt-5-mini', contextWindow: 400_000, maxOutputTokens: 128_000, pricing: price(0.25, 2, 0.025) },
  { id: 'gpt-5-nano', contextWindow: 400_000, maxOutputTokens: 128_000, pricing: price(0.05, 0.4, 0.005) },
  { id: 'gpt-4.1', contextWindow: 1_047_576, maxOutputTokens: 32_768, pricing: price(2, 8, 0.5) },
  { id: 'gpt-4.1-mini', contextWindow: 1_047_576, maxOutputTokens: 32_768, pricing: price(0.4, 1.6, 0.1) },
  { id: 'gpt-4.1-nano', contextWindow: 1_047_576, maxOutputTokens: 32_768, pricing: price(0.1, 0.4, 0.025) },
  { id: 'gpt-4o', contextWindow: 128_000, maxOutputTokens: 16_384, pricing: price(2.5, 10, 1.25) },
  { id: 'gpt-4o-mini', contextWindow: 128_000, maxOutputTokens: 16_384, pricing: price(0.15, 0.6, 0.075) },
  { id: 'o3', contextWindow: 200_000, maxOutputTokens: 100_000, pricing: price(2, 8, 0.5) },
  { id: 'o4-mini', contextWindow: 200_000, maxOutputTokens: 100_000, pricing: price(1.1, 4.4, 0.275) },
  // Anthropic (cache write = 5-minute cache)
  // Current models: context windows and list prices as Claude Code 2.1.329 (the CLI pinned with
  // @anthropic-ai/claude-agent-sdk 0.3.329) reports them in `modelUsage`, measured against the fake API;
  // output limits likewise, except claude-sonnet-4-6, for which the CLI reports its own 32k cap.
  { id: 'claude-opus-5-5', contextWindow: 1_000_000, maxOutputTokens: 128_000, pricing: price(4, 20, 0.2, 5) },
  { id: 'claude-sonnet-5-5', contextWindow: 1_000_000, maxOutputTokens: 128_000, pricing: price(2, 10, 0.1, 2.5) },
  { id: 'claude-haiku-5-5', contextWindow: 1_000_000, maxOutputTokens: 128_000, pricing: price(0.1, 0.5, 0.01, 0.125) },
  { id: 'claude-opus-5', contextWindow: 1_000_000, maxOutputTokens: 64_000, pricing: price(5, 25, 0.5, 6.25) },
  { id: 'claude-sonnet-5', contextWindow: 1_000_000, maxOutputTokens: 64_000, pricing: price(2, 10, 0.2, 2.5) },
  { id: 'claude-opus-4-8', contextWindow: 1_000_000, maxOutputTokens: 64_000, pricing: price(5, 25, 0.5, 6.25) },
  { id: 'claude-opus-4-7', contextWindow: 1_000_000, maxOutputTokens: 64_000, pricing: price(5, 25, 0.5, 6.25) },
  { id: 'claude-opus-4-6', contextWindow: 200_000, maxOutputTokens: 64_000, pricing: price(5, 25, 0.5, 6.25) },
  { id: 'claude-sonnet-4-6', contextWindow: 200_000, maxOutputTokens: 64_000, pricing: price(3, 15, 0.3, 3.75) },
  { id: 'claude-opus-4-5', contextWindow: 200_000, maxOutputTokens: 64_000, pricing: price(5, 25, 0.5, 6.25) },
  { id: 'claude-opus-4-1', contextWindow: 200_000, maxOutputTokens: 32_000, pricing: price(15, 75, 1.5, 18.75) },
  { id: 'claude-opus-4', contextWindow: 200_000, maxOutputTokens: 32_000, pricing: price(15, 75, 1.5, 18.75) },
  { id: 'claude-sonnet-4-5', contextWindow: 200_000, maxOutputTokens: 64_000, pricing: price(3, 15, 0.3, 3.75) },
  { id: 'claude-sonnet-4', contextWindow: 200_000, maxOutputTokens: 64_000, pricing: price(3, 15, 0.3, 3.75) },
  { id: 'claude-3-7-sonnet', contextWindow: 200_000, maxOutputTokens: 64_000, pricing: price(3, 15, 0.3, 3.75) },
  { id: 'claude-haiku-4-5', contextWindow: 200_000, maxOutputTokens: 64_000, pricing: price(1, 5, 0.1, 1.25) },
  { id: 'claude-3-5-haiku', contextWindow: 200_000, maxOutputTokens: 8_192, pricing: price(0.8, 4, 0.08, 1) },
  // Google
  { id: 'gemini-2.5-pro', contextWindow: 1_048_576, maxOutputTokens: 65_536, pricing: price(1.25, 10, 0.125) },
  { id: 'gemini-2.5-flash', contextWindow: 1_048_576, maxOutputTokens: 65_536, pricing: price(0.3, 2.5, 0.03) },
  { id: 'gemini-2.5-flash-lite', contextWindow: 1_048_576, maxOutputTokens: 65_536, pricing: price(0.1, 0.4, 0.01) },
];

/** Provider prefixes some gateways put before a model id (`openai/gpt-4o`, `models/gemini-2.5-pro`). */
const PROVIDER_PREFIX = /^(?:models|openai|anthropic|google)\//;

/**
 * The model's window and price: an exact id first, then the longest known id that the given id
 * extends with a version suffix (`gpt-4o-2024-08-06` → `gpt-4o`, `claude-sonnet-4-5-20250929` →
 * `claude-sonnet-4-5`). `extra` (from configuration) wins over the built-in table.
 */
export function lookupModel(id: string | undefined, extra: readonly ModelInfo[] = []): ModelInfo | undefined {
  if (!id) return undefined;
  const wanted = id.replace(PROVIDER_PREFIX, '');
  for (const table of [extra, KNOWN_MODELS]) {
    const exact = table.find((model) => model.id === id || model.id === wanted);
    if (exact) return exact;
    let best: ModelInfo | undefined;
    for (const model of table) {
      if (isVersionOf(wanted, model.id) && (!best || model.id.length > best.id.length)) best = model;
    }
    if (best) return { ...best, id };
  }
  return undefined;
}

/** `candidate` is `base` plus a date or version suffix, not another model that shares a prefix (`gpt-4o-mini` is not `gpt-4o`). */
function isVersionOf(candidate: string, base: string): boolean {
  if (!candidate.startsWith(base) || candidate.length === base.length) return false;
  const suffix = candidate.slice(base.length);
  return /^(?:-\d{4}-?\d{2}-?\d{2}|-\d{8}|-latest|-preview(?:-[\w-]+)?|-\d{3}|@\d{8})$/.test(suffix);
}

/** Cost of one request's usage. Unknown pricing gives `costUnknown`, never a silent zero. */
export function computeCost(
  pricing: ModelPricing | undefined,
  usage: Usage,
): { costUsd: number } | { costUnknown: true } {
  if (!pricing) return { costUnknown: true };
  const cacheRead = pricing.cacheReadPerMillion ?? pricing.inputPerMillion;
  const cacheWrite = pricing.cacheWritePerMillion ?? pricing.inputPerMillion;
  const dollars =
    usage.inputTokens * pricing.inputPerMillion +
    usage.outputTokens * pricing.outputPerMillion +
    usage.cacheReadTokens * cacheRead +
    usage.cacheWriteTokens * cacheWrite;
  return { costUsd: dollars / 1_000_000 };
}
