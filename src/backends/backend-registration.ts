import type { z } from 'zod';
import type { AgentBackend, Continuity, ModelInfo } from './agent-backend.js';

/**
 * The contract between a back end and Parley's configuration: what a back end declares about
 * itself (its registration) and the settings it is created with. Every registration, the registry
 * and the configuration depend on this module; it depends on nothing but the back-end contract.
 */

/** One back end's settings after configuration is resolved: environment, config file, role override. */
export interface BackendSettings {
  name: string;
  apiKey?: string;
  /** The variable the key is read from (named in advice and by `parley backends`). */
  apiKeyVariable?: string;
  baseUrl?: string;
  baseUrlVariable?: string;
  /** The model used when a request names none. */
  model: string;
  /** Windows and prices from the config file, beside the built-in table. */
  models: ModelInfo[];
  /** Back-end specific fields from the config file, validated by the registration's `optionsSchema`. */
  options: Record<string, unknown>;
  /** Parley's data folder, for back ends that keep state of their own (the Gemini CLI's home). */
  dataDir?: string;
  /** Whether the back end can be used: a key, or a local server that needs none. */
  configured: boolean;
  /** What configured it, for `parley backends` (variable names, the config file). */
  sources: string[];
}

/** How a back end plugs into configuration, the registry and `parley backends`. */
export interface BackendRegistration {
  name: string;
  continuity: Continuity;
  /** One line for `parley backends`. */
  summary: string;
  defaultModel: string;
  /** Environment variables holding the key, first set wins. */
  apiKeyVariables: string[];
  /** Environment variables holding the endpoint, first set wins. */
  baseUrlVariables: string[];
  /** Environment variables holding the default model (the client's own, e.g. GEMINI_MODEL). */
  modelVariables?: string[];
  /** Lower is preferred when no back end is chosen and several are configured. */
  priority: number;
  /** Fields the config file may set for this back end beside baseUrl, model, apiKeyEnv and models. */
  optionsSchema?: z.ZodObject;
  /**
   * For a back end in an optional package: undefined when it is installed, else how to install it
   * (`parley backends` lists it as not installed with this advice).
   */
  notInstalled?(): string | undefined;
  /** Default: an API key is present. */
  isConfigured?(settings: Omit<BackendSettings, 'configured'>): boolean;
  create(settings: BackendSettings): AgentBackend;
}
