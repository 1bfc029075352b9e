/**
 * The model-turn activity's settings: read once per worker, on first use, from cadre.config.yaml
 * and the environment. Keys stay in this process; results carry none.
 */
import { type ModelSettings, loadModelSettings } from '../providers/config';

export interface ModelDeps {
  /** Settings to use instead of cadre.config.yaml and the environment (tests, embedding). */
  models?: ModelSettings;
  /** The config file whose `models` section is read; default `cadre.config.yaml` in the worker's directory, or CADRE_CONFIG. */
  configPath?: string;
}

export function lazyModelSettings(deps: ModelDeps): () => ModelSettings {
  let settings = deps.models;
  // A bad config fails each call (non-retryable, with its path) until the worker restarts with a good one.
  return () => (settings ??= loadModelSettings(deps.configPath ?? process.env.CADRE_CONFIG ?? 'cadre.config.yaml'));
}
