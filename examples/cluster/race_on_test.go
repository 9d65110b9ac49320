//go:build race

package main

// raceDetector says the test binary runs with the race detector, which makes the word count of
// the Go source tree about ten times slower and its processes' heartbeats late under load.
const raceDetector = true
