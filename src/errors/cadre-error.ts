/** A problem the user can fix, shown as one line without a stack trace. */
export class CadreError extends Error {}

/** A bad argument, refused before anything reaches Temporal (the CLI exits 2, as for other usage errors). */
export class UsageError extends CadreError {}
