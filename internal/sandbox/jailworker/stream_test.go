package jailworker

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/sandbox/proto"
)

// TestStreamProtocolRefusals drives the worker side directly with the
// requests a broken or hostile client could send.
func TestStreamProtocolRefusals(t *testing.T) {
	t.Parallel()
	root := testRoot(t, map[string]string{"a.txt": "A"})
	big := strings.Repeat("A", (proto.StreamChunk+3)/3*4+4)
	in := strings.Join([]string{
		`{"id":1,"op":"spawn","argv":["cat"]}`,
		`{"id":2,"op":"spawn","argv":["cat"]}`,
		`{"id":3,"op":"stdin","stream":99,"data":"aGk="}`,
		`{"id":4,"op":"ack","stream":1,"ack":-5}`,
		`{"id":5,"op":"stdin","stream":1,"data":"` + big + `"}`,
		`{"id":6,"op":"spawn","shell":"cat"}`,
		`{"id":7,"op":"kill","stream":7}`,
	}, "\n") + "\n"
	for _, tc := range []struct {
		name    string
		streams bool
		want    map[uint64]string
	}{
		{"refused", false, map[uint64]string{1: "spawn is not available", 2: "spawn is not available", 3: "no stream 99",
			4: "no stream 1", 5: "no stream 1", 6: "spawn is not available", 7: "no stream 7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{Root: root, Streams: tc.streams}
			var out bytes.Buffer
			if err := s.Serve(context.Background(), strings.NewReader(in), &out); err != nil {
				t.Fatal(err)
			}
			got := map[uint64]string{}
			for _, r := range decodeLines(t, out.Bytes()) {
				if r.Error != nil {
					got[r.ID] = r.Error.Message
				}
			}
			for id, want := range tc.want {
				if !strings.Contains(got[id], want) {
					t.Errorf("request %d: got %q, want %q", id, got[id], want)
				}
			}
		})
	}
	// With streams: each refusal is about the request, not the worker.
	s := &Server{Root: root, Streams: true, testOnlySpawnExe: "/bin/cat"}
	var out bytes.Buffer
	if err := s.Serve(context.Background(), strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	kinds := map[uint64]string{}
	exits := 0
	for _, r := range decodeLines(t, out.Bytes()) {
		switch {
		case r.Event == proto.EventExit:
			exits++
		case r.Error != nil:
			kinds[r.ID] = r.Error.Kind
		case r.OK:
			kinds[r.ID] = "ok"
		}
	}
	want := map[uint64]string{1: "ok", 2: "ok", 3: proto.KindNotExist, 6: proto.KindBadRequest, 7: proto.KindNotExist}
	// 4 and 5 race the spawn of stream 1: refused either way.
	delete(kinds, 4)
	delete(kinds, 5)
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if exits != 2 {
		t.Errorf("%d exit events, want 2 (every stream ends when the input does)", exits)
	}
}

// decodeLines decodes the worker's output strictly: every line a response
// or an event.
func decodeLines(t testing.TB, out []byte) []proto.Response {
	t.Helper()
	var rs []proto.Response
	for _, l := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var r proto.Response
		dec := json.NewDecoder(bytes.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("malformed line %q: %v", l, err)
		}
		rs = append(rs, r)
	}
	return rs
}
