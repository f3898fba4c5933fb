#!/usr/bin/env node
// The `svc` admin command: runs the TypeScript sources through tsx's loader, on the Node.js that
// `npx svc` / `npm run svc` select (the project's node_modules/.bin/node; src/runtime.ts refuses
// an unsupported one with a clear message).
import { register } from 'tsx/esm/api';

register();
await import(new URL('../src/cli/main.ts', import.meta.url).href);
