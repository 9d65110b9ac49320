package hascenarios

// miniClusterScenarios are the scenarios on whole MiniClusters over the backend. Owner: helper
// "hascen".
var miniClusterScenarios []scenario
