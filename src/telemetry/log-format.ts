/**
 * The log's format (issue #25): JSON lines (pino's own) for machines, or one pretty, coloured
 * line per event (pino-pretty) for a person at a terminal.
 *
 *   SVC_LOG_FORMAT=json     JSON lines, whatever stdout is (log collectors, `| jq`)
 *   SVC_LOG_FORMAT=pretty   `16:37:12.048 INFO: request {reqId, method, route, status, …}`
 *   unset                   pretty when stdout is a terminal (TTY), JSON otherwise
 *
 * The fields are the same in both formats (the access log's, src/telemetry/access-log.ts); pretty
 * only leaves out `pid` and `hostname` and writes the time as the local clock. Colour follows the
 * terminal (pino-pretty's colorette: `NO_COLOR` turns it off).
 */
import type { FastifyServerOptions } from 'fastify';
import pinoPretty from 'pino-pretty';

export type LogFormat = 'json' | 'pretty';

/** The format to use: the setting when there is one, else pretty on a terminal and JSON elsewhere. */
export function resolveLogFormat(setting: LogFormat | undefined, stdoutIsTty = Boolean(process.stdout.isTTY)): LogFormat {
  return setting ?? (stdoutIsTty ? 'pretty' : 'json');
}

/** Fastify's `logger` option for `level` (a pino level) in `format`. */
export function loggerOptions(level: string, format: LogFormat): NonNullable<FastifyServerOptions['logger']> {
  if (format === 'json') return { level };
  return {
    level,
    stream: pinoPretty({
      colorize: Boolean(process.stdout.isTTY) && !process.env.NO_COLOR,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname',
      singleLine: true,
      sync: true,
    }),
  };
}
