/** Human-in-the-loop workflows: defineHarness / run / startSession, recordings and replay. */
export { defineAgent, defineHarness, isHarness } from './define.js';
export { replay, type ReplayOptions } from './replay.js';
export { loadWorkflow } from './load-workflow.js';
export { resolveWorkflowRef } from './workflow-ref.js';
export { createRunService, type RunServiceOptions } from './run-service.js';
export { followRunHooks } from './run-hooks.js';
export type { RunFilter, RunService, RunServiceEvents, StartRunRequest } from './run-service-types.js';
export type { ForkRunOptions } from './run-fork.js';
export { systemClock, type HarnessClock } from './clock.js';
export { JournalStepSchema, type JournalStep } from './run-journal.js';
export {
  loadRecording,
  parseRecording,
  RECORDING_FORMAT_VERSION,
  RecordedEventSchema,
  RecordedInputSchema,
  RecordedStreamEventSchema,
  RecordedTurnSchema,
  RecordingHeaderSchema,
  type RecordedEvent,
  type RecordedInput,
  type RecordedTurn,
  type Recording,
  type RecordingHeader,
} from './recording.js';
export {
  AbortedError,
  AgentTurnError,
  HarnessError,
  OutputValidationError,
  ReplayDivergenceError,
  TimeoutError,
  type ErrorInfo,
  type HarnessErrorCode,
} from './errors.js';
export { extractJsonCandidates, parseOutput as parseAgentOutput } from './json-output.js';
export type {
  AgentDefinition,
  AgentMap,
  AgentOptions,
  AgentOutput,
  AgentWorkspaceOptions,
  AgentRunOptions,
  AgentSessionTarget,
  AnyHarness,
  CreateArguments,
  ExecuteContext,
  Harness,
  HarnessAgent,
  HarnessCreateOptions,
  HarnessDefinition,
  HarnessInstance,
  HarnessResult,
  InteractiveSession,
  InteractiveSessionStatus,
  ParallelOptions,
  PendingPrompt,
  ReplyOutcome,
  ResolvedAgents,
  RetryOptions,
  SessionContext,
  SessionResult,
  StartSessionOptions,
  WaitOptions,
} from './types.js';
export type {
  AgentCompleteEvent,
  AgentStartEvent,
  AgentStreamEvent,
  HarnessCustomEvent,
  HarnessEvent,
  HarnessEventType,
  HarnessStartEvent,
  InjectedMessage,
  MessageInjectedEvent,
  ParallelCompleteEvent,
  ParallelFailedEvent,
  ParallelStartEvent,
  PhaseCompleteEvent,
  PhaseFailedEvent,
  PhaseStartEvent,
  RetryAttemptEvent,
  RetryFailureEvent,
  SessionAbortEvent,
  SessionCompleteEvent,
  SessionErrorEvent,
  SessionEvent,
  SessionEventHandler,
  SessionEventOf,
  SessionEventType,
  SessionPausedEvent,
  SessionResumedEvent,
  TaskCompleteEvent,
  TaskFailedEvent,
  TaskStartEvent,
  UserPromptEvent,
  UserReply,
  UserReplyEvent,
  UserReplyRejectedEvent,
  UserResponse,
  UserTimeoutEvent,
} from './events.js';
export {
  createScheduler,
  type AddScheduleRequest,
  type FiringReach,
  type Scheduler,
  type SchedulerEvents,
  type SchedulerOptions,
  type ScheduleTargets,
} from './scheduler.js';
export { checkTimeZone, nextFireTime, upcomingFireTimes } from './schedule-timing.js';
