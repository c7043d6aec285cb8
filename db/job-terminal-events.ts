import { EventEmitter } from 'node:events';

/**
 * In-process signal that a job row reached a terminal state (completed or failed). Fed by the job
 * repository's terminal writes; read by the long-polling status routes. It only sees writes made by
 * this process: waiters in another process learn of them by re-reading (see job-waiters.ts).
 */
const emitter = new EventEmitter();
emitter.setMaxListeners(0);

export function announceJobTerminal(jobId: string): void {
  emitter.emit(jobId);
}

export function onJobTerminal(jobId: string, listener: () => void): () => void {
  emitter.once(jobId, listener);
  return () => emitter.off(jobId, listener);
}
