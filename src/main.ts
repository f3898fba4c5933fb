/**
 * The service's entry point (`npm start` runs its compiled form, dist/main.js): refuse an
 * unsupported Node.js, start OpenTelemetry when the `OTEL_*` environment asks for it — before the
 * app is imported, as the HTTP instrumentation patches `node:http` while it loads — then serve
 * (src/serve.ts).
 *
 * Node.js's compile cache is on (`module.enableCompileCache()`, in the OS temp folder or
 * NODE_COMPILE_CACHE's): the ~1,500 modules the app loads are compiled once, not at every start —
 * about a tenth of the CPU time a start takes (issue #24, bench/README.md "embedded"). Where the
 * folder cannot be written, Node.js carries on without it.
 */
import module from 'node:module';
import { unsupportedRuntime } from './runtime.ts';
import { startTracing } from './telemetry/tracing.ts';

// Optional call: Node.js 20 (refused just below, with a message) has no compile cache.
module.enableCompileCache?.();
const runtime = unsupportedRuntime();
if (runtime) {
  console.error(`svc: ${runtime}`);
  process.exit(2);
}
const stopTracing = await startTracing();
const { serve } = await import('./serve.ts');
await serve(stopTracing);
