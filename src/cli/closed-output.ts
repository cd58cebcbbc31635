/**
 * `parley sessions | head -3`: the reader goes away while Parley still writes. Without a listener,
 * the pipe's EPIPE is an unhandled 'error' that kills the process mid-command, holding the data
 * folder's lock and leaving its indexes unclosed (the next command takes the lock over and rebuilds
 * them). With one, the rest of the output is dropped and the command ends as it would have, closing
 * what it opened.
 */
export function dropOutputWhenReaderCloses(stream: NodeJS.WriteStream): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    // After the first EPIPE the stream is destroyed: later writes fail with ERR_STREAM_DESTROYED.
    if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') return;
    throw error;
  });
}
