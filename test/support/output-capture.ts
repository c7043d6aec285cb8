/** Tees everything this process writes to stdout/stderr, so tests can assert what never appears in logs. */
let captured = '';
let installed = false;

export function captureProcessOutput(): void {
  if (installed) return;
  installed = true;
  for (const stream of [process.stdout, process.stderr]) {
    const original = stream.write.bind(stream) as (...args: unknown[]) => boolean;
    (stream as unknown as { write: (...args: unknown[]) => boolean }).write = (chunk: unknown, ...rest: unknown[]) => {
      captured += typeof chunk === 'string' ? chunk : Buffer.isBuffer(chunk) ? chunk.toString('utf8') : '';
      return original(chunk, ...rest);
    };
  }
}

export function capturedOutput(): string {
  return captured;
}
