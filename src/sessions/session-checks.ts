import type { SessionRecord } from '../store/index.js';
import { SessionError } from './errors.js';

export function notFound(sessionId: string): SessionError {
  return new SessionError('SESSION_NOT_FOUND', `No session "${sessionId}". List sessions with \`parley sessions\`.`, {
    fault: 'user',
    data: { sessionId },
  });
}

export function assertWritable(record: SessionRecord): void {
  if (record.readOnly) {
    throw new SessionError(
      'READ_ONLY_SESSION',
      `Session "${record.sessionId}" is read only (imported); continue it with \`parley chat --session ${record.sessionId}\`, which starts a managed copy.`,
      { fault: 'user', data: { sessionId: record.sessionId } },
    );
  }
  if (record.status === 'archived') {
    throw new SessionError('SESSION_ARCHIVED', `Session "${record.sessionId}" is archived and takes no new messages.`, {
      fault: 'user',
      data: { sessionId: record.sessionId },
    });
  }
}
