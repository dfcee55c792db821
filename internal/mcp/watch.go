package mcp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// defState is what warden knows of a remote server's tool definitions:
// the hashes it registered (the definitions the model was shown, which
// matched the pins) and the hashes the server listed last. A registered
// tool is called only while the two agree.
type defState struct {
	mu         sync.Mutex
	registered map[string]string
	current    map[string]string
	// stale is set when the server announced a change that could not be
	// read: every call is refused until a list succeeds.
	stale error
}

func (d *defState) check(server, tool string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stale != nil {
		return d.stale
	}
	if h, ok := d.current[tool]; !ok || h != d.registered[tool] {
		return &ChangedError{Server: server, Tool: tool, Live: true}
	}
	return nil
}

// update records a new listing and returns what differs from the previous
// one: registered tools whose definition changed or that are gone, and
// tools that are not registered (new since connect, or refused at connect).
func (d *defState) update(hashes map[string]string) (changed, unregistered []string, prev map[string]string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	prev, d.current, d.stale = d.current, hashes, nil
	for name, h := range d.registered {
		if hashes[name] != h {
			changed = append(changed, name)
		}
	}
	for name := range hashes {
		if _, ok := d.registered[name]; !ok {
			unregistered = append(unregistered, name)
		}
	}
	slices.Sort(changed)
	slices.Sort(unregistered)
	return changed, unregistered, prev
}

func (d *defState) setStale(err error) {
	d.mu.Lock()
	d.stale = err
	d.mu.Unlock()
}

// watch re-lists the server's tools each time it says they changed
// (notifications/tools/list_changed) until ctx ends.
func (r *Remote) watch(ctx context.Context) {
	defer close(r.watched)
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.relist:
		}
		lctx, cancel := context.WithTimeout(ctx, r.timeout)
		hashes, err := r.list(lctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			r.defs.setStale(fmt.Errorf("MCP server %s changed its tools and warden could not read the new list (%v); calls to it are refused until it can", r.name, err))
			r.log.Error("mcp server changed its tools and the new list could not be read; refusing its calls", "server", r.name, "err", err)
			continue
		}
		changed, unregistered, prev := r.defs.update(hashes)
		if len(changed) > 0 {
			r.log.Warn("mcp tool definitions changed after connect; calls to them are refused",
				"server", r.name, "tools", strings.Join(changed, ","), "trust", "warden mcp trust "+r.name)
		}
		var added []string
		for _, n := range unregistered {
			if _, ok := prev[n]; !ok {
				added = append(added, n)
			}
		}
		if len(added) > 0 {
			r.log.Warn("mcp server added tools after connect; they are not offered until trusted and warden restarts",
				"server", r.name, "tools", strings.Join(added, ","), "trust", "warden mcp trust "+r.name)
		}
	}
}

// list returns the server's tools as name → definition hash.
func (r *Remote) list(ctx context.Context) (map[string]string, error) {
	hashes := map[string]string{}
	for t, err := range r.session.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if len(hashes) >= maxTools {
			return nil, fmt.Errorf("more than %d tools", maxTools)
		}
		h, err := DefinitionHash(t)
		if err != nil {
			return nil, err
		}
		hashes[t.Name] = h
	}
	return hashes, nil
}

// maxTools bounds the tools of one server.
const maxTools = 1000
