import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // expect.poll's own default is 1 s: too short for what propagates asynchronously (a NOTIFY,
    // a job, a browser's next paint) on a loaded 2-core runner. A poll that never holds still fails.
    expect: { poll: { timeout: 10_000 } },
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
  },
});
