/**
 * The model-turn activity's settings: read once per worker, on first use, from cadre.config.yaml
 * and the environment. Keys stay in this process; results carry none.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { type ModelSettings, loadModelSettings } from '../providers/config';
import { ErrorTypes, permanent } from '../errors/application-failures';
import { type CustomToolsConfig, NO_CUSTOM_TOOLS, customToolsConfig } from './tools/custom/config';
import { CustomTools } from './tools/custom/registry';
import type { Containment } from './tools/custom/mcp';

export interface ModelDeps {
  /** Settings to use instead of cadre.config.yaml and the environment (tests, embedding). */
  models?: ModelSettings;
  /** The config file whose `models`, `tools` and `mcp` sections are read; default `cadre.config.yaml` in the worker's directory, or CADRE_CONFIG. */
  configPath?: string;
  /** TypeScript tool modules and MCP servers to use instead of the config file's. */
  customTools?: CustomToolsConfig;
}

export function configFile(deps: ModelDeps): string {
  return deps.configPath ?? process.env.CADRE_CONFIG ?? 'cadre.config.yaml';
}

export function lazyModelSettings(deps: ModelDeps): () => ModelSettings {
  let settings = deps.models;
  // A bad config fails each call (non-retryable, with its path) until the worker restarts with a good one.
  return () => (settings ??= loadModelSettings(configFile(deps)));
}

/** The worker's TypeScript and MCP tools, from the config file on first use. */
export function lazyCustomTools(deps: ModelDeps, containment: Containment): () => CustomTools {
  let tools: CustomTools | undefined;
  return () => (tools ??= new CustomTools(deps.customTools ?? readCustomTools(configFile(deps)), containment));
}

function readCustomTools(file: string): CustomToolsConfig {
  if (!existsSync(file)) return NO_CUSTOM_TOOLS;
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    throw permanent(ErrorTypes.ModelConfigInvalid, `${file}: not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  return customToolsConfig(doc, file);
}
