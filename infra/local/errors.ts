/**
 * A problem starting or stopping the embedded stack that the user can act on. Its message
 * is one line saying what is wrong and what to do; the CLI prints it without a stack trace.
 */
export class StackError extends Error {
  override readonly name = 'StackError';
}
