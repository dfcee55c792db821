package app

import (
	"testing"

	"go.uber.org/goleak"
)

// An App starts channels, brokers and jails: closing it must leave no
// goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
