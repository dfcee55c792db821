package telegram

import (
	"testing"

	"go.uber.org/goleak"
)

// Channels deliver and poll in goroutines of their own: every test must
// leave none behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
