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

/**
 * Where the service's logs go under test: every line is kept for assertions (capturedOutput) at
 * debug level, so secrets checks see everything logged; only error lines are echoed to stderr.
 */
export function testLogSink(): NodeJS.WritableStream {
  return {
    write(chunk: string | Buffer) {
      const text = typeof chunk === 'string' ? chunk : chunk.toString('utf8');
      captured += text;
      if (/"level":"(error|fatal)"/.test(text)) process.stderr.write(text);
      return true;
    },
  } as unknown as NodeJS.WritableStream;
}
