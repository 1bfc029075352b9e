/** Registers cadre's search attributes on a namespace when they are missing. */
import { status as grpcStatus } from '@grpc/grpc-js';
import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { SEARCH_ATTRIBUTES } from '../protocol/definitions';

export interface SetupReport {
  added: string[];
  present: string[];
}

export class SetupPermissionError extends Error {}

export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<SetupReport> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const known = { ...existing.systemAttributes, ...existing.customAttributes };
  const missing = SEARCH_ATTRIBUTES.filter((key) => !(key.name in known));
  const present = SEARCH_ATTRIBUTES.filter((key) => key.name in known).map((key) => key.name);
  if (missing.length === 0) return { added: [], present };
  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(
        missing.map((key) => [key.name, temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
      ),
    });
  } catch (err) {
    const code = (err as { code?: number }).code;
    if (code === grpcStatus.PERMISSION_DENIED || code === grpcStatus.UNAUTHENTICATED) {
      throw new SetupPermissionError(
        `cannot register search attributes ${missing.map((k) => k.name).join(', ')} on namespace "${namespace}": permission denied. ` +
          `Ask an operator to run: ${missing.map((k) => `temporal operator search-attribute create --namespace ${namespace} --name ${k.name} --type Keyword`).join(' && ')}`,
      );
    }
    if (code !== grpcStatus.ALREADY_EXISTS) throw err;
  }
  return { added: missing.map((key) => key.name), present };
}
