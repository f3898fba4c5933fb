/**
 * Vitest reporter that ends the run with one plain line, `<backend>: N passed, N failed, N skipped`,
 * so CI logs can be read the same way whatever the runner.
 */
import type { Reporter, TestModule } from 'vitest/node';

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>) {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') counts.passed++;
        else if (state === 'failed') counts.failed++;
        else counts.skipped++;
      }
    }
    const backend = process.env.TEST_DATABASE_URL ? 'postgres' : 'pglite';
    console.log(`\n${backend}: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
  }
}
