export * from './conventions.js';
export { captureMessageContent, genAiInstruments, parleyTracer } from './instruments.js';
export * from './agent-trace.js';
export * from './spans.js';
export * from './chat-span.js';
