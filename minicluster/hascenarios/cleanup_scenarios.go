package hascenarios

// cleanupScenarios are the cleanup scenarios (global vs local cleanup, dirty entry first,
// marked clean last, failing steps retried). Owner: helper "hascen".
var cleanupScenarios []scenario
