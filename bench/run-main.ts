/** How a benchmark script ends: exit 0 when it finished, 1 with the reason when it did not. */
export function runMain(main: () => Promise<void>, log: (line: string) => void): void {
  main().then(
    () => {
      process.exitCode = 0;
    },
    (err: unknown) => {
      log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      process.exitCode = 1;
    },
  );
}
