#!/usr/bin/env node
// `svc-results`: runs the client's TypeScript sources through tsx's loader (no build step on install).
import { register } from 'tsx/esm/api';

register();
await import(new URL('../src/cli.ts', import.meta.url).href);
