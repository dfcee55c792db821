package hostsetup

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// A want is one of warden's entries in a JSON configuration file.
type want struct {
	path []string
	// Exactly one of these.
	value     any    // the key holds exactly this
	item      string // the key is a list holding this string
	hookGroup any    // the key is a list of hook groups, one of them warden's (see isWardenGroup)
	what      string // for Check: what the entry does
}

// jsonDoc is a JSON configuration file being edited.
type jsonDoc struct {
	m map[string]any
}

func parseJSONDoc(path string, b []byte) (*jsonDoc, error) {
	d := &jsonDoc{m: map[string]any{}}
	if len(bytes.TrimSpace(b)) == 0 {
		return d, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&d.m); err != nil {
		return nil, fmt.Errorf("%s is not a JSON object (fix or move it, then run setup again): %w", path, err)
	}
	if d.m == nil {
		d.m = map[string]any{}
	}
	return d, nil
}

func (d *jsonDoc) bytes() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d.m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// parent returns the object holding path's last key, creating objects on
// the way; a non-object on the way is an error (the user's own shape).
func (d *jsonDoc) parent(path []string, create bool) (map[string]any, error) {
	m := d.m
	for i, k := range path[:len(path)-1] {
		next, ok := m[k]
		if !ok {
			if !create {
				return nil, nil
			}
			n := map[string]any{}
			m[k] = n
			m = n
			continue
		}
		nm, ok := next.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", strings.Join(path[:i+1], "."))
		}
		m = nm
	}
	return m, nil
}

// apply sets w in the document.
func (d *jsonDoc) apply(w want) error {
	m, err := d.parent(w.path, true)
	if err != nil {
		return err
	}
	key := w.path[len(w.path)-1]
	switch {
	case w.item != "":
		list, _ := m[key].([]any)
		for _, x := range list {
			if x == w.item {
				return nil
			}
		}
		m[key] = append(list, w.item)
	case w.hookGroup != nil:
		list, _ := m[key].([]any)
		var keep []any
		for _, g := range list {
			if !isWardenGroup(g) {
				keep = append(keep, g)
			}
		}
		m[key] = append(keep, w.hookGroup)
	default:
		m[key] = w.value
	}
	return nil
}

// has reports whether the document holds w.
func (d *jsonDoc) has(w want) bool {
	m, err := d.parent(w.path, false)
	if err != nil || m == nil {
		return false
	}
	v, ok := m[w.path[len(w.path)-1]]
	if !ok {
		return false
	}
	switch {
	case w.item != "":
		list, _ := v.([]any)
		for _, x := range list {
			if x == w.item {
				return true
			}
		}
		return false
	case w.hookGroup != nil:
		list, _ := v.([]any)
		for _, g := range list {
			if sameJSON(g, w.hookGroup) {
				return true
			}
		}
		return false
	}
	return sameJSON(v, w.value)
}

// isWardenGroup reports whether a hook group runs `warden hook`: such a
// group is warden's own, replaced by setup.
func isWardenGroup(g any) bool {
	gm, ok := g.(map[string]any)
	if !ok {
		return false
	}
	hooks, _ := gm["hooks"].([]any)
	for _, h := range hooks {
		hm, _ := h.(map[string]any)
		if c, _ := hm["command"].(string); strings.Contains(c, " hook claude-code") || strings.Contains(c, " hook codex") ||
			strings.Contains(c, " hook gemini-cli") {
			if strings.Contains(c, "warden") {
				return true
			}
		}
	}
	return false
}

// sameJSON compares two values as JSON (numbers by their text).
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var x, y any
	json.Unmarshal(ja, &x)
	json.Unmarshal(jb, &y)
	return reflect.DeepEqual(x, y)
}

// jsonFile plans a JSON file holding wants.
func jsonFile(path, why string, wants []want) (*File, error) {
	before, mode, err := readFile(path)
	if err != nil {
		return nil, err
	}
	d, err := parseJSONDoc(path, before)
	if err != nil {
		return nil, err
	}
	for _, w := range wants {
		if err := d.apply(w); err != nil {
			return nil, fmt.Errorf("%s: %w; setup does not change the user's own entries", path, err)
		}
	}
	after, err := d.bytes()
	if err != nil {
		return nil, err
	}
	f := &File{Path: path, Before: before, After: after, Mode: mode, Why: why}
	if before != nil && !bytes.Equal(before, after) {
		// A file already holding every entry is left as it is, byte for byte.
		if orig, err := parseJSONDoc(path, before); err == nil && allHeld(orig, wants) {
			f.After = before
		}
	}
	f.check = func(content []byte) []string {
		d, err := parseJSONDoc(path, content)
		if err != nil {
			return []string{err.Error()}
		}
		var miss []string
		for _, w := range wants {
			if !d.has(w) {
				miss = append(miss, w.what)
			}
		}
		return miss
	}
	return f, nil
}

func allHeld(d *jsonDoc, wants []want) bool {
	for _, w := range wants {
		if !d.has(w) {
			return false
		}
	}
	return true
}
