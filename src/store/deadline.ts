/**
 * `work`, or a rejection with `timeout()` once `ms` have passed without it settling. `work` itself goes on (a
 * statement or command in flight cannot be taken back from here); its late outcome is ignored.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, timeout: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(timeout()), ms);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
