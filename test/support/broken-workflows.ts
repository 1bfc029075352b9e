/** A runPlan whose workflow task always fails, as a worker with broken workflow code would run it. */
export async function runPlan(): Promise<never> {
  throw new Error('broken on purpose');
}
