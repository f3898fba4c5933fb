/** The pure rules of the judge's bounds: backoff, the next run's delay, Retry-After, failure families. */
import { describe, expect, it } from 'vitest';
import { backoffMs, MAX_BACKOFF_MS, nextRunDelaySeconds } from '../../src/embed/grading/grade-job.ts';
import { GraderError, retryAfterSeconds } from '../../src/embed/grading/failures.ts';

const headers = (h: Record<string, string>) => ({ get: (name: string) => h[name] ?? null });

describe('backoff within a run (full jitter)', () => {
  it('grows exponentially up to the cap, with the jitter below it', () => {
    const err = new GraderError('model_error', 'x');
    expect(backoffMs(1, err, () => 1)).toBe(500);
    expect(backoffMs(3, err, () => 1)).toBe(2000);
    expect(backoffMs(10, err, () => 1)).toBe(MAX_BACKOFF_MS);
    expect(backoffMs(3, err, () => 0)).toBe(0);
    expect(backoffMs(3, err, () => 0.5)).toBe(1000);
  });

  it('waits what Retry-After asks, even beyond the cap (the run then ends)', () => {
    expect(backoffMs(1, new GraderError('rate_limited', 'x', 2), () => 0)).toBe(2000);
    expect(backoffMs(1, new GraderError('rate_limited', 'x', 30), () => 0)).toBe(30_000);
  });
});

describe('the delay before the next run (equal jitter)', () => {
  it('doubles per run between half and all of the step, capped, never below Retry-After', () => {
    expect(nextRunDelaySeconds(1, 60, 3600, 0, () => 0)).toBe(30);
    expect(nextRunDelaySeconds(1, 60, 3600, 0, () => 1)).toBe(60);
    expect(nextRunDelaySeconds(3, 60, 3600, 0, () => 1)).toBe(240);
    expect(nextRunDelaySeconds(20, 60, 3600, 0, () => 1)).toBe(3600);
    expect(nextRunDelaySeconds(20, 60, 3600, 0, () => 0)).toBe(1800);
    expect(nextRunDelaySeconds(1, 60, 3600, 900, () => 0)).toBe(900);
  });
});

describe('Retry-After', () => {
  it('reads retry-after-ms, seconds and HTTP dates', () => {
    expect(retryAfterSeconds(headers({ 'retry-after-ms': '1500' }))).toBe(1.5);
    expect(retryAfterSeconds(headers({ 'retry-after': '12' }))).toBe(12);
    const now = Date.parse('2026-11-23T12:00:00Z');
    expect(retryAfterSeconds(headers({ 'retry-after': 'Mon, 23 Nov 2026 12:01:00 GMT' }), now)).toBe(60);
    expect(retryAfterSeconds(headers({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(retryAfterSeconds(headers({}))).toBeUndefined();
  });
});

describe('failure families', () => {
  it.each([
    ['timeout', true],
    ['unreachable', true],
    ['model_error', true],
    ['rate_limited', true],
    ['invalid_output', false],
    ['refused', false],
    ['model_rejected', false],
  ] as const)('%s is transient: %s', (reason, transient) => {
    expect(new GraderError(reason, 'x').transient).toBe(transient);
  });
});
