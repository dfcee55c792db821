package approval

import (
	"slices"
	"testing"

	"github.com/wardenhq/warden/internal/config"
)

// The config validator and the channel builder accept the same names.
func TestKnownChannelsMatchConfig(t *testing.T) {
	got, want := slices.Sorted(slices.Values(KnownChannels)), slices.Sorted(slices.Values(config.NotifyChannels))
	if !slices.Equal(got, want) {
		t.Fatalf("approval.KnownChannels %v != config.NotifyChannels %v", got, want)
	}
}
