import type { Command } from 'commander';
import {
  createBackend,
  getBackendRegistration,
  listBackendRegistrations,
  missingSetting,
  resolveBackendConfig,
  type ResolvedBackendConfig,
} from '../../backends/index.js';
import { resolveDataDir } from '../options.js';

export interface BackendStatus {
  name: string;
  default: boolean;
  configured: boolean;
  /** What configured it (variable names, the config file), or what would. */
  configuredBy: string[];
  /** Variables (and config fields) this back end reads. */
  reads: string[];
  baseUrl?: string;
  reachable: boolean | null;
  detail: string;
  continuity: 'native' | 'managed';
  defaultModel: string;
  summary: string;
}

/** Each back end: configured or not, from what, reachable or not (a short check), continuity, default model. */
export async function listBackendStatus(
  config: ResolvedBackendConfig,
  options: { timeoutMs?: number } = {},
): Promise<BackendStatus[]> {
  return Promise.all(
    listBackendRegistrations().map(async (registration): Promise<BackendStatus> => {
      const settings = config.settings[registration.name]!;
      const reads = [
        ...registration.apiKeyVariables,
        ...registration.baseUrlVariables,
        ...(registration.modelVariables ?? []),
      ];
      let reachable: boolean | null = null;
      const missing = missingSetting(config, registration.name);
      let detail = missing ? `not configured: set ${missing.variable ?? 'its settings'}` : '';
      const installAdvice = registration.notInstalled?.();
      if (installAdvice) {
        reachable = false;
        detail = `not installed: ${installAdvice}`;
      }
      if (settings.configured && !installAdvice) {
        try {
          const backend = createBackend(registration.name, config);
          if (backend.checkAvailability) {
            const result = await backend.checkAvailability({ signal: AbortSignal.timeout(options.timeoutMs ?? 3_000) });
            reachable = result.available;
            detail = result.detail;
          } else {
            detail = 'no availability check';
          }
        } catch (error) {
          reachable = false;
          detail = error instanceof Error ? error.message : String(error);
        }
      }
      return {
        name: registration.name,
        default: registration.name === config.backend,
        configured: settings.configured,
        configuredBy:
          settings.sources.length > 0 ? settings.sources : registration.name === 'scripted' ? ['built in'] : [],
        reads,
        ...(settings.baseUrl ? { baseUrl: settings.baseUrl } : {}),
        reachable,
        detail,
        continuity: registration.continuity,
        defaultModel: registration.name === config.backend ? config.model : settings.model,
        summary: registration.summary,
      };
    }),
  );
}

function renderTable(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** `parley backends`: what is configured and reachable. */
export function register(program: Command): void {
  program
    .command('backends')
    .description(
      'List the back ends: configured or not, from which variables, reachable or not, continuity, default model',
    )
    .option('--json', 'print JSON')
    .option('--timeout <ms>', 'how long each reachability check may take', '3000')
    .action(async (options: { json?: boolean; timeout: string }, command: Command) => {
      const config = await resolveBackendConfig({ dataDir: resolveDataDir(command) });
      const statuses = await listBackendStatus(config, { timeoutMs: Number(options.timeout) || 3_000 });
      if (options.json) {
        const output = {
          default: {
            backend: config.backend,
            model: config.model,
            reason: config.reason,
            ...(config.configFile ? { configFile: config.configFile } : {}),
          },
          ...(config.notice ? { notice: config.notice } : {}),
          warnings: config.warnings,
          backends: statuses,
        };
        process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
        return;
      }
      const why = {
        override: 'chosen by override',
        config: `chosen in ${config.configFile ?? 'the config file'}`,
        detected: 'the first configured one',
        fallback: 'nothing else is configured',
      }[config.reason];
      const lines = [`Default: ${config.backend} (${config.model}) — ${why}`];
      if (config.notice) lines.push(config.notice);
      for (const warning of config.warnings) lines.push(`Warning: ${warning}`);
      lines.push('');
      const rows = [['', 'BACK END', 'CONFIGURED', 'REACHABLE', 'CONTINUITY', 'DEFAULT MODEL', 'DETAIL']];
      for (const status of statuses) {
        const registration = getBackendRegistration(status.name);
        const configured = status.configured ? `yes (${status.configuredBy.join(', ')})` : 'no';
        const reachable = status.reachable === null ? '-' : status.reachable ? 'yes' : 'no';
        const detail = status.detail || registration?.summary || '';
        rows.push([
          status.default ? '*' : '',
          status.name,
          configured,
          reachable,
          status.continuity,
          status.defaultModel,
          detail,
        ]);
      }
      lines.push(renderTable(rows));
      process.stdout.write(`${lines.join('\n')}\n`);
    });
}
