package testenv

import (
	"os"
	"testing"
)

func TestLookFindsShell(t *testing.T) {
	if Look("sh") == "" {
		t.Fatal("Look(sh) found nothing; every Linux machine has /bin/sh")
	}
	if Look("warden-no-such-program") != "" {
		t.Fatal("Look found a program that does not exist")
	}
}

func TestNeedRoot(t *testing.T) {
	paths := Need(t, "sh")
	if len(paths) != 1 || paths[0] == "" {
		t.Fatalf("Need(sh) = %q", paths)
	}
	if os.Geteuid() == 0 {
		Need(t, "root") // must not skip or fail
	}
}
