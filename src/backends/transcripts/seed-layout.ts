import * as z from 'zod';
import {
  MAIN_CONVERSATION,
  describeIssues,
  type ConversationBlock,
  type UnsequencedEvent,
  type TurnMetadata,
} from '../../conversation/index.js';
import { parseJson, timeOf } from './json.js';
import { emptySections, type SummarySections } from './summary-sections.js';
import { BlockCollector, emptyInfo, type ParsedNativeTranscript, type TranscriptWarning } from './types.js';

/**
 * The design documents' own session layout (seeds 002 and 003): one folder of files per session,
 * `session_{id}.json`, `chat_{id}.json`, `checkpoint_{id}.json`, `context_{id}.json` and
 * `agent-description_{id}.json`. Two generations of each shape exist (seed 002's and seed 003's),
 * plus the old per-feature `chat.json` that seed 002 migrates from (a bare list of messages, or an
 * object with `messages` and no session id). All of them are read; unknown fields are ignored.
 */

/** The contents of one session's files; any may be missing. */
export interface SeedLayoutFiles {
  /** The `{id}` of the file names (for an old `chat.json`, the name of its folder). */
  sessionId: string;
  session?: string;
  chat?: string;
  checkpoint?: string;
  context?: string;
  agentDescription?: string;
}

const Timestamp = z.string();

const TokensMetadata = z.union([
  z.number(),
  z.object({ input: z.number().optional(), output: z.number().optional() }).loose(),
]);

const SeedMessageSchema = z
  .object({
    id: z.string().min(1).optional(),
    role: z.enum(['user', 'assistant', 'system']),
    content: z.union([
      z.string(),
      z.array(z.object({ type: z.string().optional(), text: z.string().optional() }).loose()),
    ]),
    timestamp: Timestamp.optional(),
    tokens: z.number().optional(),
    pinned: z.boolean().optional(),
    metadata: z.object({ tokens: TokensMetadata.optional() }).loose().optional(),
  })
  .loose();
type SeedMessage = z.infer<typeof SeedMessageSchema>;

/** Seed 002: `{sessionId, messages, metadata}`; seed 003: `{messages, totalMessages, …}`; the old chat.json: a bare list. */
const SeedChatSchema = z.union([
  z.array(z.unknown()),
  z
    .object({
      sessionId: z.string().optional(),
      messages: z.array(z.unknown()),
      metadata: z
        .object({ createdAt: Timestamp.optional(), updatedAt: Timestamp.optional(), tokenCount: z.number().optional() })
        .loose()
        .optional(),
    })
    .loose(),
]);

/** Seed 003's session.json. */
const SeedSessionSchema = z
  .object({
    id: z.string().optional(),
    type: z.string().optional(),
    agentType: z.string().optional(),
    featureId: z.string().optional(),
    taskId: z.string().optional(),
    taskState: z.string().optional(),
    createdAt: Timestamp.optional(),
    updatedAt: Timestamp.optional(),
    status: z.string().optional(),
    stats: z
      .object({
        totalMessages: z.number().optional(),
        totalTokens: z.number().optional(),
        totalCompactions: z.number().optional(),
        lastCompactionAt: Timestamp.optional(),
      })
      .loose()
      .optional(),
  })
  .loose();

const StringList = z.array(z.string()).optional();

/** Seed 002 (`completedItems`, `pendingItems`) and seed 003 (`completed`, `inProgress`, `pending`) checkpoints. */
const SeedCheckpointSchema = z
  .object({
    version: z.number().optional(),
    createdAt: Timestamp.optional(),
    updatedAt: Timestamp.optional(),
    summary: z
      .object({
        completedItems: StringList,
        pendingItems: StringList,
        completed: StringList,
        inProgress: StringList,
        pending: StringList,
        decisions: StringList,
        blockers: StringList,
      })
      .loose()
      .optional(),
    ralphLoop: z
      .object({
        currentIteration: z.number().int().nonnegative(),
        passedChecks: z.array(z.string()),
        failedChecks: z.array(z.string()),
        lastError: z.string().optional(),
      })
      .optional(),
    tokens: z
      .object({
        checkpoint: z.number().optional(),
        lastCompactionInput: z.number().optional(),
        totalSaved: z.number().optional(),
      })
      .loose()
      .optional(),
    compactionInfo: z
      .object({
        messagesCompacted: z.number().optional(),
        oldestMessageTimestamp: Timestamp.optional(),
        newestMessageTimestamp: Timestamp.optional(),
        compactedAt: Timestamp.optional(),
      })
      .loose()
      .optional(),
    stats: z
      .object({ totalCompactions: z.number().optional(), totalMessages: z.number().optional() })
      .loose()
      .optional(),
  })
  .loose();

const SeedContextSchema = z.record(z.string(), z.unknown());

/** Seed 002 (`role`, `instructions`, `allowedTools`) and seed 003 (`roleInstructions`). */
const SeedAgentDescriptionSchema = z
  .object({
    agentType: z.string().optional(),
    role: z.string().optional(),
    roleInstructions: z.string().optional(),
    instructions: z.array(z.string()).optional(),
    allowedTools: z.array(z.string()).optional(),
    toolInstructions: z.string().optional(),
    createdAt: Timestamp.optional(),
    tokens: z.number().optional(),
  })
  .loose();

export interface SeedSessionInfo {
  agentType?: string;
  scopeType?: string;
  featureId?: string;
  taskId?: string;
  taskState?: string;
  status?: string;
  createdAt?: number;
  updatedAt?: number;
}

export interface SeedCheckpoint {
  version?: number;
  /** ISO 8601. */
  createdAt?: string;
  summary: SummarySections;
  ralphLoop?: { currentIteration: number; passedChecks: string[]; failedChecks: string[]; lastError?: string };
  tokens: { checkpoint?: number; lastCompactionInput?: number; totalSaved?: number };
  /** Messages folded into the checkpoint (they are no longer in the chat file). */
  messageCount: number;
  oldestMessageTimestamp?: string;
  newestMessageTimestamp?: string;
}

export interface SeedContext {
  sections: Record<string, string>;
  tokens?: number;
  updatedAt?: string;
}

export interface SeedAgentDescription {
  agentType?: string;
  role: string;
  instructions: string[];
  allowedTools: string[];
  toolInstructions?: string;
  createdAt?: string;
  tokens?: number;
}

export interface ParsedSeedLayout extends ParsedNativeTranscript {
  session?: SeedSessionInfo;
  checkpoint?: SeedCheckpoint;
  context?: SeedContext;
  agentDescription?: SeedAgentDescription;
}

type FileKind = 'session' | 'chat' | 'checkpoint' | 'context' | 'agentDescription';

const FILE_NAMES: Record<FileKind, (id: string) => string> = {
  session: (id) => `session_${id}.json`,
  chat: (id) => `chat_${id}.json`,
  checkpoint: (id) => `checkpoint_${id}.json`,
  context: (id) => `context_${id}.json`,
  agentDescription: (id) => `agent-description_${id}.json`,
};

/** Parses one seed-layout session. A file that is not JSON or not of its shape is reported and left out; the rest still imports. */
export function parseSeedLayout(files: SeedLayoutFiles): ParsedSeedLayout {
  const warnings: TranscriptWarning[] = [];
  const read = <Schema extends z.ZodType>(kind: FileKind, schema: Schema): z.infer<Schema> | undefined => {
    const text = files[kind];
    if (text === undefined) return undefined;
    const file = FILE_NAMES[kind](files.sessionId);
    const parsed = parseJson(text);
    if (parsed === undefined) {
      warnings.push({ code: 'INVALID_FILE', file, message: `${file} is not valid JSON; left out` });
      return undefined;
    }
    const checked = schema.safeParse(parsed.value);
    if (!checked.success) {
      warnings.push({
        code: 'INVALID_FILE',
        file,
        message: `${file} does not have the seed layout's shape (${describeIssues(checked.error.issues)}); left out`,
      });
      return undefined;
    }
    return checked.data;
  };

  const sessionFile = read('session', SeedSessionSchema);
  const chat = read('chat', SeedChatSchema);
  const checkpointFile = read('checkpoint', SeedCheckpointSchema);
  const contextFile = read('context', SeedContextSchema);
  const descriptionFile = read('agentDescription', SeedAgentDescriptionSchema);

  const info = emptyInfo();
  info.nativeSessionId = sessionFile?.id ?? (Array.isArray(chat) ? undefined : chat?.sessionId) ?? files.sessionId;
  const events: UnsequencedEvent[] = [];
  const collector = new BlockCollector();
  const emit = (event: UnsequencedEvent): void => {
    events.push(event);
    collector.add(event);
  };

  if (chat !== undefined) {
    const messages = Array.isArray(chat) ? chat : chat.messages;
    const fallbackAt =
      timeOf(Array.isArray(chat) ? undefined : chat.metadata?.createdAt) ?? timeOf(sessionFile?.createdAt) ?? 0;
    const seen = new Set<string>();
    let lastAt = fallbackAt;
    messages.forEach((raw, index) => {
      const checked = SeedMessageSchema.safeParse(raw);
      const file = FILE_NAMES.chat(files.sessionId);
      if (!checked.success) {
        warnings.push({
          code: 'INVALID_MESSAGE',
          file,
          message: `${file}: message ${index} is not a chat message (${describeIssues(checked.error.issues)}); skipped`,
        });
        return;
      }
      const message = checked.data;
      const at = timeOf(message.timestamp) ?? lastAt;
      lastAt = at;
      let id = message.id ?? `message-${index}`;
      if (seen.has(id)) id = `${id}-${index}`;
      seen.add(id);
      const block = messageBlock(message, id, at);
      info.blockCount++;
      if (block.type !== 'system') info.messageCount++;
      if (block.type === 'user_message') info.firstUserMessage ??= block.content;
      info.startedAt ??= at;
      info.endedAt = at;
      emit({ type: 'block_complete', conversationId: MAIN_CONVERSATION, at, block });
      const usage = message.metadata?.tokens;
      if (message.role === 'assistant' && typeof usage === 'object') {
        const metadata: TurnMetadata = {
          usage: {
            inputTokens: usage.input ?? 0,
            outputTokens: usage.output ?? 0,
            cacheReadTokens: 0,
            cacheWriteTokens: 0,
          },
          turnComplete: true,
        };
        emit({ type: 'metadata_update', conversationId: MAIN_CONVERSATION, at, metadata });
      }
    });
  }

  const result: ParsedSeedLayout = {
    blocks: collector.main,
    subagents: [],
    warnings,
    nativeSessionId: info.nativeSessionId,
    events,
    usage: collector.usage,
    info,
  };

  if (sessionFile !== undefined) {
    const session: SeedSessionInfo = {};
    if (sessionFile.agentType !== undefined) session.agentType = sessionFile.agentType;
    if (sessionFile.type !== undefined) session.scopeType = sessionFile.type;
    if (sessionFile.featureId !== undefined) session.featureId = sessionFile.featureId;
    if (sessionFile.taskId !== undefined) session.taskId = sessionFile.taskId;
    if (sessionFile.taskState !== undefined) session.taskState = sessionFile.taskState;
    if (sessionFile.status !== undefined) session.status = sessionFile.status;
    const createdAt = timeOf(sessionFile.createdAt);
    if (createdAt !== undefined) session.createdAt = createdAt;
    const updatedAt = timeOf(sessionFile.updatedAt);
    if (updatedAt !== undefined) session.updatedAt = updatedAt;
    result.session = session;
  }
  if (checkpointFile !== undefined) {
    const checkpoint = checkpointOf(checkpointFile);
    if (checkpoint !== undefined) result.checkpoint = checkpoint;
  }
  if (contextFile !== undefined) result.context = contextOf(contextFile);
  if (descriptionFile !== undefined) result.agentDescription = descriptionOf(descriptionFile, sessionFile?.agentType);
  return result;
}

function messageBlock(message: SeedMessage, id: string, at: number): ConversationBlock {
  const content =
    typeof message.content === 'string' ? message.content : message.content.map((part) => part.text ?? '').join('');
  const tokens = message.tokens ?? (typeof message.metadata?.tokens === 'number' ? message.metadata.tokens : undefined);
  const metadata: Record<string, unknown> = { ...message.metadata };
  if (tokens !== undefined) metadata['tokens'] = tokens;
  const withMetadata = Object.keys(metadata).length > 0 ? { metadata } : {};
  if (message.role === 'system')
    return {
      type: 'system',
      id,
      createdAt: at,
      completedAt: at,
      subtype: 'info',
      content,
      data: { kind: 'seed_system_message' },
    };
  if (message.role === 'assistant')
    return { type: 'assistant_text', id, createdAt: at, completedAt: at, content, ...withMetadata };
  return {
    type: 'user_message',
    id,
    createdAt: at,
    completedAt: at,
    content,
    ...(message.pinned ? { pinned: true } : {}),
    ...withMetadata,
  };
}

function checkpointOf(file: z.infer<typeof SeedCheckpointSchema>): SeedCheckpoint | undefined {
  const summary = emptySections();
  const source = file.summary ?? {};
  summary.completed.push(...(source.completed ?? source.completedItems ?? []));
  summary.inProgress.push(...(source.inProgress ?? []));
  summary.pending.push(...(source.pending ?? source.pendingItems ?? []));
  summary.decisions.push(...(source.decisions ?? []));
  summary.blockers.push(...(source.blockers ?? []));
  // A fresh session's checkpoint is empty (seed 002's initCheckpoint): nothing to carry over.
  if (Object.values(summary).every((items: string[]) => items.length === 0) && file.ralphLoop === undefined)
    return undefined;
  const checkpoint: SeedCheckpoint = {
    summary,
    tokens: {
      ...(file.tokens?.checkpoint !== undefined ? { checkpoint: file.tokens.checkpoint } : {}),
      ...(file.tokens?.lastCompactionInput !== undefined
        ? { lastCompactionInput: file.tokens.lastCompactionInput }
        : {}),
      ...(file.tokens?.totalSaved !== undefined ? { totalSaved: file.tokens.totalSaved } : {}),
    },
    messageCount: file.compactionInfo?.messagesCompacted ?? file.stats?.totalMessages ?? 0,
  };
  if (file.version !== undefined) checkpoint.version = file.version;
  const createdAt = file.compactionInfo?.compactedAt ?? file.updatedAt ?? file.createdAt;
  if (createdAt !== undefined) checkpoint.createdAt = createdAt;
  if (file.ralphLoop !== undefined) checkpoint.ralphLoop = file.ralphLoop;
  if (file.compactionInfo?.oldestMessageTimestamp !== undefined)
    checkpoint.oldestMessageTimestamp = file.compactionInfo.oldestMessageTimestamp;
  if (file.compactionInfo?.newestMessageTimestamp !== undefined)
    checkpoint.newestMessageTimestamp = file.compactionInfo.newestMessageTimestamp;
  return checkpoint;
}

const CONTEXT_BOOKKEEPING = new Set(['sessionId', 'updatedAt', 'tokens']);

function contextOf(file: Record<string, unknown>): SeedContext {
  const sections: Record<string, string> = {};
  for (const [key, value] of Object.entries(file)) {
    if (CONTEXT_BOOKKEEPING.has(key) || value === undefined || value === null) continue;
    sections[key] = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  }
  const context: SeedContext = { sections };
  if (typeof file['tokens'] === 'number') context.tokens = file['tokens'];
  if (typeof file['updatedAt'] === 'string') context.updatedAt = file['updatedAt'];
  return context;
}

function descriptionOf(
  file: z.infer<typeof SeedAgentDescriptionSchema>,
  agentType: string | undefined,
): SeedAgentDescription {
  const description: SeedAgentDescription = {
    role: file.role ?? file.roleInstructions ?? '',
    instructions: file.instructions ?? [],
    allowedTools: file.allowedTools ?? [],
  };
  const type = file.agentType ?? agentType;
  if (type !== undefined) description.agentType = type;
  if (file.toolInstructions !== undefined) description.toolInstructions = file.toolInstructions;
  if (file.createdAt !== undefined) description.createdAt = file.createdAt;
  if (file.tokens !== undefined) description.tokens = file.tokens;
  return description;
}

/** Which seed-layout file a name is, and the session id in it; undefined for other names. */
export function seedLayoutFileOf(name: string): { kind: FileKind; sessionId: string } | undefined {
  const match = /^(session|chat|checkpoint|context|agent-description)_(.+)\.json$/.exec(name);
  if (match === null) return undefined;
  const kind = match[1] === 'agent-description' ? 'agentDescription' : (match[1] as FileKind);
  return { kind, sessionId: match[2]! };
}

export type SeedLayoutFileKind = FileKind;
