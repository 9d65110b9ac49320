package hascenarios

// dispatcherScenarios are the Dispatcher-level scenarios (a dispatcher.Runner or
// StandaloneDispatcher over the backend). Owner: helper "hadisp".
var dispatcherScenarios []scenario
