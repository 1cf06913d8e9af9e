// Human wording for when the access token, or a value minted for the user, stops working.

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

/** Local wall-clock time as HH:MM:SS. */
export function clockTime(at: Date): string {
  return `${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}`;
}

/** "in 4 min 10 s (at 14:03:12)", or "expired at 14:03:12" once past. */
export function describeExpiry(expiresAt: Date, now: Date): string {
  const seconds = Math.floor((expiresAt.getTime() - now.getTime()) / 1000);
  const at = clockTime(expiresAt);
  if (seconds <= 0) return `expired at ${at}`;
  if (seconds < 60) return `in ${seconds} s (at ${at})`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `in ${minutes} min ${seconds % 60} s (at ${at})`;
  return `in ${Math.floor(minutes / 60)} h ${minutes % 60} min (at ${at})`;
}

/** A minted value's line: "Expires in 42 s (at 14:03:12)", or "Expired at 14:03:12" once past. */
export function describeValueExpiry(expiresAt: Date, now: Date): string {
  const text = describeExpiry(expiresAt, now);
  return text.startsWith('in ') ? `Expires ${text}` : `Expired at ${clockTime(expiresAt)}`;
}
