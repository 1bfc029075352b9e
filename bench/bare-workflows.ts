/** The bare worker's workflow bundle (bench/bare-worker.ts): the hand-written baseline alone, none of cadre's workflows. */
export { baselineSteps } from './baseline-workflow';
