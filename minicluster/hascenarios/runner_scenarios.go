package hascenarios

// runnerScenarios are the JobManagerRunner (jobmaster.LeadershipRunner) scenarios over the
// backend's JobMaster leader election. Owner: helper "hadisp".
var runnerScenarios []scenario
