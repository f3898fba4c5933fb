#!/usr/bin/env node
// The `svc` admin command: runs the TypeScript sources through tsx's loader.
import { register } from 'tsx/esm/api';

register();
await import(new URL('../src/cli/main.ts', import.meta.url).href);
