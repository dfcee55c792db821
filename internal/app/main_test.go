package app

import (
	"testing"

	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
)

// An App starts channels, brokers and jails: closing it must leave no
// goroutine behind (sandboxtest.Main checks with goleak). TestMain also
// doubles as `warden worker`, for the jails the tests start.
func TestMain(m *testing.M) { sandboxtest.Main(m) }
