/**
 * A promise a browser-half test settles by hand.
 */

/** The promise and the hands that settle it. */
export interface Deferred<T = unknown> {
  readonly promise: Promise<T>
  readonly resolve: (value: T) => void
  readonly reject: (error: unknown) => void
}

/**
 * A promise the test settles by hand.
 * @returns the promise and its `resolve` / `reject`.
 */
export function deferred<T = unknown>(): Deferred<T> {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}
