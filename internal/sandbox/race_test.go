//go:build race

package sandbox

// raceEnabled: the jails' workers are this test binary, built with the race
// detector, whose shadow memory and lazier collection make a worker's
// resident size grow further for the same live data.
const raceEnabled = true
