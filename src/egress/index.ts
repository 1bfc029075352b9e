/**
 * Egress control for agents' tools: one policy, one checker, and the two ways out built on it
 * (a fetch for in-process HTTP, a unix-socket proxy plus an in-sandbox bridge for commands).
 */
export { NO_EGRESS, egressSchema, hasEgress, isAllowedHost, narrowEgress, normalizeHost, toEgressPolicy, type EgressConfig, type EgressPolicy, type NormalHost } from './policy';
export {
  EGRESS_DENIED,
  checkDestination,
  defaultLookup,
  egressDenied,
  isEgressDenied,
  type CheckOptions,
  type CheckedDestination,
  type EgressDeniedDetails,
  type EgressLookup,
  type EgressRule,
  type LookupAddress,
} from './check';
export { TOO_MANY_REDIRECTS, egressFetch, type EgressFetch, type EgressFetchOptions } from './fetch';
export { startEgressProxy, type EgressLogEvent, type EgressProxy, type EgressProxyOptions } from './proxy';
export { BRIDGE_SCRIPT, proxyEnv } from './bridge';
