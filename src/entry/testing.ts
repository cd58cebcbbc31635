/**
 * `parley/testing`: fakes for users' tests. The scripted back end plays scripted turns and records
 * every call it gets, so a test can drive Parley offline and assert what each agent was asked.
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
} from '../backends/index.js';
