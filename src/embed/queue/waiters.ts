/**
 * The requests of this process waiting for the outcome of a grading run (the judge's
 * `SVC_JUDGE_WAIT`): `waitFor` resolves with the outcome a worker of this process reports through
 * `notify`, or undefined after the wait. Nothing crosses processes: a request whose job runs
 * elsewhere times out and reads the artifact again (judge.ts).
 */
import type { JobOutcome } from './index.ts';

export class Waiters {
  private readonly waiting = new Map<string, Set<(o: JobOutcome) => void>>();

  /** The outcome of this process's run of `artifactId`, or undefined after `ms` milliseconds. */
  waitFor(artifactId: string, ms: number): Promise<JobOutcome | undefined> {
    return new Promise((resolve) => {
      let set = this.waiting.get(artifactId);
      if (!set) {
        set = new Set();
        this.waiting.set(artifactId, set);
      }
      const done = (o: JobOutcome | undefined) => {
        clearTimeout(timer);
        set!.delete(waiter);
        if (!set!.size) this.waiting.delete(artifactId);
        resolve(o);
      };
      const waiter = (o: JobOutcome) => done(o);
      const timer = setTimeout(() => done(undefined), ms);
      set.add(waiter);
    });
  }

  /** Resolve every wait for `artifactId` with `outcome`. */
  notify(artifactId: string, outcome: JobOutcome): void {
    for (const w of [...(this.waiting.get(artifactId) ?? [])]) w(outcome);
  }

  /** Resolve every wait with `outcome` (shutdown). */
  notifyAll(outcome: JobOutcome): void {
    for (const set of [...this.waiting.values()]) for (const w of [...set]) w(outcome);
    this.waiting.clear();
  }
}
