/* global module */
/**
 * The layers of src/, checked by `npm run lint` (docs/architecture.md draws them):
 * client and CLI on top; the worker wires activities; workflows are deterministic and reach
 * activities only by type; the plan format, containment (sandbox, egress, commands, secrets), providers and
 * the leaves (codec, analytics, store) never import the layers above them. No import circles.
 */
const above = (...dirs) => `^src/(${dirs.join('|')})/`;

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'an import circle: split out what both sides need', from: { path: '^src/' }, to: { circular: true } },
    {
      name: 'workflows-deterministic',
      severity: 'error',
      comment: 'workflow code imports activities, the worker and I/O layers by type only',
      from: { path: '^src/workflows/' },
      to: { path: above('activities', 'worker', 'client', 'providers', 'sandbox', 'egress', 'secrets', 'codec', 'analytics', 'store', 'ask', 'preflight', 'tools'), dependencyTypesNot: ['type-only'] },
    },
    { name: 'plan-format-below-engine', severity: 'error', comment: 'the plan format knows no engine, worker or client', from: { path: '^src/plan-format/' }, to: { path: above('workflows', 'activities', 'worker', 'client', 'providers', 'ask', 'preflight') } },
    { name: 'worker-not-client', severity: 'error', comment: 'the worker is wired below the client: what both need (task queues) lives in protocol/', from: { path: '^src/worker/' }, to: { path: above('client'), dependencyTypesNot: ['type-only'] } },
    { name: 'activities-below-worker', severity: 'error', comment: 'activities are wired by the worker and called by workflows, never the other way', from: { path: '^src/activities/' }, to: { path: above('worker', 'client', 'ask', 'preflight') } },
    { name: 'client-not-worker', severity: 'error', comment: 'the typed client does not load the worker or its activities (the CLI and its demo load them lazily)', from: { path: '^src/client/', pathNot: '^src/client/((cli|demo)[.]ts$|commands/)' }, to: { path: above('worker', 'activities'), dependencyTypesNot: ['type-only'] } },
    {
      name: 'containment-below-activities',
      severity: 'error',
      comment: 'sandbox, egress, command rules and secrets are used by activities, not the reverse',
      from: { path: above('sandbox', 'egress', 'commands', 'secrets') },
      to: { path: above('activities', 'workflows', 'worker', 'client', 'ask', 'providers') },
    },
    { name: 'git-below-activities', severity: 'error', comment: "cadre's own git is used by activities, never the reverse: what both need lives in processes/", from: { path: '^src/git/' }, to: { path: above('activities', 'workflows', 'worker', 'client', 'ask') } },
    { name: 'processes-leaf', severity: 'error', comment: 'processes tied to the worker, and path checks, are a leaf that activities and git share', from: { path: '^src/processes/' }, to: { path: above('activities', 'workflows', 'worker', 'client', 'ask', 'git', 'providers', 'sandbox', 'egress') } },
    { name: 'providers-below-activities', severity: 'error', comment: 'model providers know nothing of activities, workflows or the client', from: { path: '^src/providers/' }, to: { path: above('activities', 'workflows', 'worker', 'client', 'ask') } },
    {
      name: 'protocol-below-engine',
      severity: 'error',
      comment: 'the protocol clients and workflows share imports neither (and no I/O layer)',
      from: { path: '^src/protocol/' },
      to: { path: above('workflows', 'activities', 'worker', 'client', 'ask', 'preflight', 'sandbox', 'egress', 'secrets', 'codec', 'analytics', 'store'), dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'leaves',
      severity: 'error',
      comment: 'codec, analytics and the blob store are leaves: they import no engine layer',
      from: { path: above('codec', 'analytics', 'store') },
      to: { path: above('workflows', 'activities', 'worker', 'client', 'ask', 'providers'), dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist)/' },
  },
};
