import pino, { type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };
export type LogFormat = 'json' | 'pretty';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
export const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Field names whose values are secrets wherever they appear in a logged object (headers, bodies, credentials). */
const SECRET_FIELDS = [
  'x-api-key',
  'authorization',
  'cookie',
  'set-cookie',
  'proxy-authorization',
  'x-webhook-signature',
  'apiKey',
  'api_key',
  'password',
  'secret',
  'token',
  'accessToken',
  'access_token',
  'refreshToken',
  'refresh_token',
  'clientSecret',
  'client_secret',
  'totpSecret',
  'totp_secret',
  'webhookSecret',
  'credentials',
  'cookies',
  'sensitive_data',
  'masterKey',
  'adminToken',
];

const accessor = (name: string) => (/^[A-Za-z_$][\w$]*$/.test(name) ? `.${name}` : `["${name}"]`);

/**
 * pino redaction paths: each secret field at the top of a logged object and up to three levels
 * down (`headers.authorization`, `body.credentials`, `req.headers["x-api-key"]`, ...).
 */
export const REDACTED_PATHS: string[] = SECRET_FIELDS.flatMap((name) => {
  const tail = accessor(name);
  return [tail.startsWith('.') ? tail.slice(1) : tail, `*${tail}`, `*.*${tail}`, `*.*.*${tail}`];
});

/** The secret fields at the top of a logged object only (the first path of each field above). */
const TOP_LEVEL_REDACTED_PATHS: string[] = SECRET_FIELDS.map((name) => {
  const tail = accessor(name);
  return tail.startsWith('.') ? tail.slice(1) : tail;
});

export interface LogOptions {
  level?: LogLevel;
  /** json: one JSON object per line (production); pretty: human-readable lines (npm start). */
  format?: LogFormat;
  /** Where lines go; default process.stdout (so whatever wraps stdout sees them). */
  destination?: DestinationStream | NodeJS.WritableStream;
}

export function createLogger(options: LogOptions = {}): Logger {
  const destination = options.destination ?? process.stdout;
  const stream =
    options.format === 'pretty'
      ? pretty({
          sync: true,
          colorize: destination === process.stdout && process.stdout.isTTY === true,
          translateTime: 'SYS:HH:MM:ss.l',
          singleLine: true,
          ignore: 'pid,hostname',
          destination,
        })
      : destination;
  return pino(
    {
      level: options.level ?? 'info',
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    stream as DestinationStream,
  );
}

let root: Logger = createLogger();

/** Replaces the process-wide logger (entry points call this once, after reading the configuration). */
export function configureLogging(options: LogOptions): Logger {
  root = createLogger(options);
  return root;
}

/** The process-wide logger; modules ask for it when they log, so `configureLogging` applies everywhere. */
export function log(): Logger {
  return root;
}

/**
 * A logger for flat lines, whose every field is a string, number or boolean (the request log's
 * access line): `logger`'s destination, level and format, redacting every secret field at the top
 * of the line. It skips the pass that looks for secret fields inside nested values, which pino runs
 * on every value of a line (primitives included) and which costs more than the rest of the line; a
 * flat line has nothing for it to find. Never log objects through it.
 */
export function flatLogger(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: TOP_LEVEL_REDACTED_PATHS, censor: '[redacted]' } });
}

let flat: { from: Logger; logger: Logger } | null = null;

/** flatLogger of the process-wide logger (made again after `configureLogging`). */
export function flatLog(): Logger {
  if (flat?.from !== root) flat = { from: root, logger: flatLogger(root) };
  return flat.logger;
}

/** A logger whose lines carry the job id. */
export function jobLog(jobId: string, fields: Record<string, unknown> = {}): Logger {
  return root.child({ jobId, ...fields });
}
