/**
 * The service's entry point (`npm start` runs its compiled form, dist/main.js): refuse an
 * unsupported Node.js, start OpenTelemetry when the `OTEL_*` environment asks for it — before the
 * app is imported, as the HTTP instrumentation patches `node:http` while it loads — then serve
 * (src/serve.ts).
 */
import { unsupportedRuntime } from './runtime.ts';
import { startTracing } from './telemetry/tracing.ts';

const runtime = unsupportedRuntime();
if (runtime) {
  console.error(`svc: ${runtime}`);
  process.exit(2);
}
const stopTracing = await startTracing();
const { serve } = await import('./serve.ts');
await serve(stopTracing);
