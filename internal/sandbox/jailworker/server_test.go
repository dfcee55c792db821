package jailworker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/sandbox/proto"
	"github.com/wardenhq/warden/internal/workspace"
)

// serveLines runs a Server over a fresh workspace on the given input and
// returns the responses, one per line.
func serveLines(t testing.TB, root *workspace.Root, in string) []proto.Response {
	t.Helper()
	s := &Server{Root: root, Hello: proto.Hello{PID: 1}}
	var out bytes.Buffer
	if err := s.Serve(context.Background(), strings.NewReader(in), &out); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	var resps []proto.Response
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, proto.MaxLineBytes+1)
	for sc.Scan() {
		var r proto.Response
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("response is not JSON: %q: %v", sc.Text(), err)
		}
		resps = append(resps, r)
	}
	return resps
}

func testRoot(t testing.TB, files map[string]string) *workspace.Root {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := workspace.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

func TestServerMalformedLines(t *testing.T) {
	t.Parallel()
	root := testRoot(t, map[string]string{"a.txt": "A"})
	tests := []struct {
		line     string
		wantID   uint64
		wantKind string
	}{
		{`not json`, 0, proto.KindBadRequest},
		{`{"id": 7, "op": "read_file", "path": "a.txt", "bogus": 1}`, 7, proto.KindBadRequest},
		{`{"id": 0, "op": "ping"}`, 0, proto.KindBadRequest},
		{`{"id": -1, "op": "ping"}`, 0, proto.KindBadRequest},
		{`{"id": 8, "op": "launch_missiles"}`, 8, proto.KindBadRequest},
		{`{"id": 9, "op": "read_file", "path": "a.txt"} {"id": 10}`, 9, proto.KindBadRequest},
		{`{"id": 11, "op": "exec", "argv": ["true"]}`, 11, proto.KindOther}, // no runner here
		{`{"id": 12, "op": "read_file", "path": "../x"}`, 12, proto.KindEscapes},
		{`{"id": 13, "op": "read_file", "path": ".env"}`, 13, proto.KindMasked},
		{`{"id": 14, "op": "write_file", "path": ".git/config", "data": ""}`, 14, proto.KindProtected},
		{`{"id": 15, "op": "read_file", "path": "missing"}`, 15, proto.KindNotExist},
		{`{"id": 16, "op": "read_file", "path": "a\u0000b"}`, 16, proto.KindInvalid},
		{`{"id": 17, "op": "read_file", "path": "a.txt", "limit": 0.5}`, 17, proto.KindBadRequest},
		{`{"id": 18, "op": "write_file", "path": "b", "data": "!!notbase64"}`, 18, proto.KindBadRequest},
	}
	for _, tc := range tests {
		resps := serveLines(t, root, tc.line+"\n")
		if len(resps) != 1 {
			t.Errorf("%s: %d responses, want 1", tc.line, len(resps))
			continue
		}
		r := resps[0]
		if r.OK || r.Error == nil || r.ID != tc.wantID || r.Error.Kind != tc.wantKind {
			t.Errorf("%s: got id %d ok %v error %+v; want id %d kind %s", tc.line, r.ID, r.OK, r.Error, tc.wantID, tc.wantKind)
		}
	}
}

func TestServerLongLine(t *testing.T) {
	t.Parallel()
	root := testRoot(t, map[string]string{"a.txt": "A"})
	long := `{"id": 1, "op": "write_file", "path": "big", "data": "` + strings.Repeat("A", proto.MaxLineBytes) + `"}`
	resps := serveLines(t, root, long+"\n"+`{"id": 2, "op": "read_file", "path": "a.txt"}`+"\n")
	if len(resps) != 2 {
		t.Fatalf("%d responses, want 2", len(resps))
	}
	if resps[0].Error == nil || resps[0].Error.Kind != proto.KindTooLarge {
		t.Errorf("long line: got %+v, want too_large", resps[0])
	}
	if !resps[1].OK || string(resps[1].Data) != "A" {
		t.Errorf("the line after a long one: got %+v", resps[1])
	}
	if _, err := os.Stat(filepath.Join(root.Dir(), "big")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the long request was acted on: %v", err)
	}
}

// TestServerOps drives every file op through the protocol and compares with
// the workspace itself (the differential oracle).
func TestServerOps(t *testing.T) {
	t.Parallel()
	root := testRoot(t, map[string]string{"a.txt": "A", "d/b.txt": "B", "d/.env": "S"})
	in := strings.Join([]string{
		`{"id":1,"op":"ping"}`,
		`{"id":2,"op":"write_file","path":"n/new.txt","data":"aGk="}`,
		`{"id":3,"op":"read_file","path":"n/new.txt"}`,
		`{"id":4,"op":"list","path":"d"}`,
		`{"id":5,"op":"mkdir","path":"e/f"}`,
		`{"id":6,"op":"rename","path":"n/new.txt","new_path":"e/f/moved.txt"}`,
		`{"id":7,"op":"stat","path":"e/f/moved.txt"}`,
		`{"id":8,"op":"remove","path":"a.txt"}`,
		`{"id":9,"op":"walk","path":"."}`,
		`{"id":10,"op":"rename","path":"d/b.txt","new_path":".env"}`,
	}, "\n")
	// One request at a time: requests in flight together have no order.
	byID := map[uint64]proto.Response{}
	for _, line := range strings.Split(in, "\n") {
		for _, r := range serveLines(t, root, line+"\n") {
			byID[r.ID] = r
		}
	}
	for id := uint64(1); id <= 9; id++ {
		if !byID[id].OK {
			t.Errorf("request %d failed: %+v", id, byID[id].Error)
		}
	}
	if string(byID[3].Data) != "hi" {
		t.Errorf("read back %q", byID[3].Data)
	}
	if names := entryNames(byID[4].Entries); !cmp.Equal(names, []string{"b.txt"}) {
		t.Errorf("list d = %v (masked .env must not show)", names)
	}
	if i := byID[7].Info; i == nil || i.Size != 2 {
		t.Errorf("stat: %+v", i)
	}
	var walked []string
	for _, e := range byID[9].Entries {
		walked = append(walked, e.Path)
	}
	if want := []string{".", "d", "d/b.txt", "e", "e/f", "e/f/moved.txt", "n"}; !cmp.Equal(walked, want) {
		t.Errorf("walk: %v, want %v", walked, want)
	}
	if r := byID[10]; r.OK || r.Error.Kind != proto.KindMasked {
		t.Errorf("rename onto .env: %+v", r)
	}
}

func entryNames(es []proto.WireInfo) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name)
	}
	return out
}

// FuzzWorkerProtocol feeds random lines to the server loop: it must never
// crash, and every response must be a well-formed line.
func FuzzWorkerProtocol(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"op":"ping"}`,
		`{"id":2,"op":"read_file","path":"a.txt"}`,
		`{"id":3,"op":"write_file","path":"x/y","data":"aGk=","perm":420}`,
		`{"id":4,"op":"walk","path":"."}`,
		`{"id":5,"op":"rename","path":"a.txt","new_path":"../b"}`,
		`{"id":6,"op":"exec","argv":["true"],"cwd":"..","timeout_ms":1}`,
		`{"id":7,"op":"list","path":"/etc"}`,
		`{"id":8,"op":"stat","path":".env"}`,
		`{"id":9,"op":"mkdir","path":".git/hooks/x"}`,
		`{"id":1e999}`, `{"id":"1"}`, `[]`, `null`, "\x00\xff", `{"id":1,"op":"remove","path":"."}`,
		// Streams: the spawned program is always cat, without arguments.
		`{"id":10,"op":"spawn","argv":["cat"]}` + "\n" + `{"id":11,"op":"stdin","stream":10,"data":"aGk=","eof":true}`,
		`{"id":10,"op":"spawn","argv":["x"],"cwd":"../.."}`,
		`{"id":10,"op":"spawn","argv":["x"]}` + "\n" + `{"id":10,"op":"spawn","argv":["x"]}`,
		`{"id":10,"op":"spawn","argv":["x"]}` + "\n" + `{"id":11,"op":"ack","stream":10,"ack":65536}` + "\n" + `{"id":12,"op":"kill","stream":10}`,
		`{"id":10,"op":"spawn","argv":["x"]}` + "\n" + `{"id":11,"op":"stdin","stream":10,"data":"aGk="}` + "\n" + `{"id":12,"op":"stdin","stream":10,"eof":true}`,
		`{"id":13,"op":"stdin","stream":0}`, `{"id":14,"op":"ack","stream":1,"ack":-1}`, `{"id":15,"op":"kill"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		root := testRoot(t, map[string]string{"a.txt": "A", ".env": "S"})
		s := &Server{Root: root, Streams: true, testOnlySpawnExe: "/bin/cat"}
		var out bytes.Buffer
		in := line + "\n" + `{"id":424242,"op":"ping"}` + "\n"
		if err := s.Serve(context.Background(), strings.NewReader(in), &out); err != nil {
			t.Fatalf("Serve: %v", err)
		}
		sawPing := false
		// Each stream: its spawn answer, then stdout events, then one exit.
		const started, ended = 1, 2
		streams := map[uint64]int{}
		for _, r := range decodeLines(t, out.Bytes()) {
			if r.Event != "" {
				if r.ID != 0 || r.OK || r.Error != nil || streams[r.Stream] != started {
					t.Fatalf("event %+v out of place (stream state %d)", r, streams[r.Stream])
				}
				switch r.Event {
				case proto.EventStdout:
					if len(r.Data) > proto.StreamChunk {
						t.Fatalf("stdout event of %d bytes", len(r.Data))
					}
				case proto.EventExit:
					if r.Exit == nil {
						t.Fatal("exit event without a status")
					}
					streams[r.Stream] = ended
				default:
					t.Fatalf("unknown event %q", r.Event)
				}
				continue
			}
			if r.OK == (r.Error != nil) {
				t.Fatalf("response is neither ok nor an error: %+v", r)
			}
			if r.OK && r.Stream != 0 {
				if r.Stream != r.ID || streams[r.ID] != 0 {
					t.Fatalf("spawn answer %+v for a stream in state %d", r, streams[r.ID])
				}
				streams[r.ID] = started
			}
			if r.ID == 424242 {
				sawPing = r.OK
			}
		}
		if !sawPing {
			t.Fatalf("the server stopped answering after %q", line)
		}
		for id, state := range streams {
			if state != ended {
				t.Fatalf("stream %d has no exit event", id)
			}
		}
		if b, err := os.ReadFile(filepath.Join(root.Dir(), ".env")); err != nil || string(b) != "S" {
			t.Fatalf(".env changed: %q %v", b, err)
		}
	})
}
