package approval

import (
	"errors"
	"testing"
)

// The approver is built on first use only, once, and a failure to build it
// fails every use (a supervised call is refused, never let through).
func TestLazy(t *testing.T) {
	t.Parallel()
	s := memStore(t)
	builds := 0
	l := Lazy(func() (Approver, func(), error) {
		builds++
		b, err := New(t.Context(), Options{Store: s})
		return b, func() {}, err
	})
	if l.Built() {
		t.Fatal("built before use")
	}
	for range 2 {
		if _, err := l.Foresee(t.Context(), lsReq); err != nil {
			t.Fatal(err)
		}
	}
	if !l.Built() || builds != 1 {
		t.Fatalf("built=%v %d times", l.Built(), builds)
	}
	l.Close()
	boom := errors.New("no store")
	bad := Lazy(func() (Approver, func(), error) { return nil, nil, boom })
	out, err := bad.Ask(t.Context(), lsReq)
	if !errors.Is(err, boom) || out.Approved {
		t.Fatalf("%+v %v", out, err)
	}
	if _, err := bad.Foresee(t.Context(), lsReq); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	bad.Close()
}
