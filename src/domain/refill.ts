/** A key's refill schedule: `remaining` is set to `amount` at 00:00 UTC of every due day. */
export interface RefillSchedule {
  interval: 'daily' | 'monthly';
  amount: number;
  refillDay: number | null;
}

const daysInMonth = (year: number, month: number): number => new Date(Date.UTC(year, month + 1, 0)).getUTCDate();

/**
 * The most recent due time at or before `now`: today's 00:00 UTC for daily refills; for monthly ones the
 * refill day (default 1) of this month, or of the previous month when it has not come yet. A refill day
 * past a month's end falls on that month's last day (31 → 30 April, 28/29 February).
 */
export function lastRefillDue(schedule: Pick<RefillSchedule, 'interval' | 'refillDay'>, now: number): number {
  const d = new Date(now);
  const year = d.getUTCFullYear();
  const month = d.getUTCMonth();
  if (schedule.interval === 'daily') return Date.UTC(year, month, d.getUTCDate());
  const day = schedule.refillDay ?? 1;
  const thisMonth = Date.UTC(year, month, Math.min(day, daysInMonth(year, month)));
  if (thisMonth <= now) return thisMonth;
  const [py, pm] = month === 0 ? [year - 1, 11] : [year, month - 1];
  return Date.UTC(py, pm, Math.min(day, daysInMonth(py, pm)));
}

/** Whether a refill is due: the last due time is later than the last refill. Idempotent by construction. */
export const refillIsDue = (schedule: Pick<RefillSchedule, 'interval' | 'refillDay'>, lastRefillAt: number | null, now: number): boolean =>
  lastRefillAt === null || lastRefillAt < lastRefillDue(schedule, now);
