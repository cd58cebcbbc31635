/**
 * `parley/testing`: fakes for users' tests. The scripted back end plays scripted turns and
 * records every call it gets.
 */
export {
  createScriptedBackend,
  step,
  sampleFromSchema,
  countScriptedTokens,
  SCRIPTED_MODEL,
  SCRIPTED_BACKEND_NAME,
  type ScriptedBackend,
  type ScriptedBackendOptions,
  type ScriptedCall,
  type ScriptedTurn,
  type ScriptStep,
} from './scripted/index.js';
