//go:build !race

package main

// raceDetector says the test binary runs with the race detector (see race_on_test.go).
const raceDetector = false
