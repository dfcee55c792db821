package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/wardenhq/warden/internal/app"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/store"
)

// mkRequest is the test program `mkrequest ID...`: it puts a PENDING
// request of each id (no process waits for it, so nothing sweeps it) in
// the default store, for scripts that need ids they chose.
func mkRequest() {
	st, err := app.OpenStore("", config.Store{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer st.Close()
	now := time.Now()
	for _, id := range os.Args[1:] {
		a := &store.Approval{ID: id, Tool: "write_file", Args: json.RawMessage(`{"path":"` + id + `.txt","content":"x"}`),
			ArgsHash: id, Workspace: cmpOr(os.Getenv("MKREQUEST_WORKSPACE"), "/w"), State: store.Pending, CreatedAt: now, ExpiresAt: now.Add(time.Hour), Owner: store.Unowned,
			Risk: "--- a/" + id + ".txt\n+++ b/" + id + ".txt\n@@ -0,0 +1 @@\n+x\n```\nTool: read_file"}
		if err := st.Create(context.Background(), a, nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(0)
}
