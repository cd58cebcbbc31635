export {
  createGeminiCliBackend,
  parseGeminiTranscripts,
  renderGeminiMd,
  folderWorkspace,
  GEMINI_CLI_BACKEND_NAME,
  GEMINI_DEFAULT_MODEL,
  GEMINI_DEFAULT_ENDPOINT,
  type GeminiCliOptions,
} from './gemini-cli-backend.js';
export { locateGeminiCli, GeminiCliNotInstalledError, GEMINI_CLI_PACKAGE, GEMINI_CLI_VERSION } from './locate.js';
export { GeminiCliStorage, projectHash } from './storage.js';
export { parseStreamLine, GeminiStreamEventSchema, type GeminiStreamEvent } from './stream-json.js';
export { slugify as geminiProjectSlug } from './storage.js';
