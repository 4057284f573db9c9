// An error's message in the words it carries, whatever was thrown.

/** The message of `error`, or `error` as text when it is not an Error. */
export function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
