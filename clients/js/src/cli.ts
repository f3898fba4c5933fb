/**
 * `svc-results`, the analysts' command of the Results API client (commander):
 *
 *   svc-results export <activity-results|progress|artifacts|learners|deletions> --format csv|ndjson|jsonl|parquet
 *               [--updated-since <RFC 3339>] [--out <file>] [--resume] [--base-url <url>] [--limit <n>]
 *
 * The API key comes from `SVC_API_KEY`, the service's address from `--base-url` or `SVC_BASE_URL`.
 * Progress goes to stderr; errors print `svc-results: <code>: <message> (request <id>)` and exit 1.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { createResultsClient, ResultsApiError } from './index.ts';
import { runExport, type ExportFormat } from './export.ts';

const RESOURCES = ['activity-results', 'progress', 'artifacts', 'learners', 'deletions'] as const;
/** Retries of a request on 429, 503 or a network failure, each announced on stderr. */
const RETRIES = 5;
// Without --limit the rows come from one streamed export (/v1/exports/*); with it, page by page.

const program = new Command('svc-results').description('Export data of the learning-content service’s Results API').showHelpAfterError();

const ENVIRONMENT = `
Environment:
  SVC_API_KEY    a results API key of the tenant (svc_…; \`npx svc key create\` on the service), required
  SVC_BASE_URL   the service's address, e.g. https://learn.example.com (or --base-url)`;
program.addHelpText('after', ENVIRONMENT);

// `… | head` (or `2>&1 | head`): the reader went away; stop quietly, as Unix tools do.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}

program
  .command('export')
  .description('write every row of a list (or those changed since an instant) as CSV, JSON Lines or Parquet')
  .addArgument(program.createArgument('<resource>', 'what to export (deletions: the tombstones, with --updated-since)').choices(RESOURCES))
  .addHelpText('after', ENVIRONMENT)
  .addOption(
    new Option('--format <format>', 'output format (jsonl = ndjson; parquet needs --out)').choices(['csv', 'ndjson', 'jsonl', 'parquet']).makeOptionMandatory(),
  )
  .option('--updated-since <instant>', 'only rows created or changed at or after this RFC 3339 instant')
  .option('--out <file>', 'write to this file (a streamed export only once whole; default: stdout)')
  .option('--resume', 'continue an interrupted export into --out where it stopped (a streamed parquet or progress export starts over)')
  .option('--base-url <url>', 'the service’s address (default: SVC_BASE_URL)')
  .option('--limit <n>', 'read the paged feed, n rows per request (1–200) instead of the stream', (v: string) => {
    if (!/^[1-9]\d*$/.test(v) || Number(v) > 200) throw new InvalidArgumentError('an integer from 1 to 200');
    return Number(v);
  })
  .action(
    async (
      resource: (typeof RESOURCES)[number],
      o: { format: ExportFormat; updatedSince?: string; out?: string; resume?: boolean; baseUrl?: string; limit?: number },
    ) => {
      const baseUrl = o.baseUrl ?? process.env.SVC_BASE_URL;
      const apiKey = process.env.SVC_API_KEY;
      if (!baseUrl) throw new Error('set SVC_BASE_URL or pass --base-url');
      if (!apiKey) throw new Error('set SVC_API_KEY to a results API key (svc_…)');
      const client = createResultsClient({
        baseUrl,
        apiKey,
        maxRetries: RETRIES,
        onRetry: ({ attempt, waitSeconds, reason, url }) =>
          process.stderr.write(`svc-results: ${new URL(url).origin}: ${reason}; retrying in ${waitSeconds} s (${attempt}/${RETRIES})\n`),
      });
      // Ctrl-C: the export stops as a failed one does (a resumable partial file is kept and said
      // so, another removed), then the command exits 130; a second Ctrl-C ends it at once.
      process.once('SIGINT', () => {
        interrupt.abort();
        setTimeout(() => process.exit(130), 2000).unref(); // a request or a retry's wait that does not stop
      });
      await runExport(client, {
        resource,
        format: o.format,
        updatedSince: o.updatedSince,
        out: o.out,
        resume: o.resume,
        limit: o.limit,
        signal: interrupt.signal,
      });
    },
  );

const interrupt = new AbortController();

try {
  await program.parseAsync();
} catch (err) {
  if (interrupt.signal.aborted) {
    process.stderr.write('svc-results: interrupted\n');
    process.exit(130);
  }
  const message = err instanceof ResultsApiError ? `${err.code}: ${err.message}${err.requestId ? ` (request ${err.requestId})` : ''}` : (err as Error).message;
  process.stderr.write(`svc-results: ${message}\n`);
  process.exitCode = 1;
}
