/**
 * Parley side by side with the tools people would use instead (`npm run bench peers`): durable
 * step-by-step state against LangGraph's and Mastra's stores (bench/peers-durable.ts), and reading
 * what an agent did against ccusage (bench/peers-reading.ts). The peers are installed from the npm
 * registry into bench/peers (its own package.json and lock) by this bench, never by `npm test`;
 * a peer that cannot be installed or run here is printed with the reason.
 */
import { installPeers } from './peers-install.js';
import { runDurable } from './peers-durable.js';
import { runReading } from './peers-reading.js';

export async function run(): Promise<string> {
  const install = installPeers();
  const parts = ['### Peers', '', `Peers' packages (bench/peers): ${install.failure ?? install.summary}.`, ''];
  const only = process.env['PARLEY_BENCH_PEERS_ONLY'];
  if (only === undefined || only === 'durable') parts.push(await runDurable(install));
  if (only === undefined || only === 'reading') parts.push(await runReading(install));
  return parts.join('\n');
}
