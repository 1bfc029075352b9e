/** Secrets kept out of what tools produce: see ./redact. */
export { MIN_SECRET_LENGTH, REDACTED, Redactor } from './redact';
