import path from 'node:path';

/** A scripted model's scenario file is found beside the plan, wherever the worker runs. */
export function modelAt(model: string, baseDir: string): string {
  const scripted = 'scripted:';
  return model.startsWith(scripted) ? `${scripted}${path.resolve(baseDir, model.slice(scripted.length).trim())}` : model;
}
