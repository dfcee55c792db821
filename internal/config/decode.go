package config

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// A layer is one configuration file decoded against the schema: the values
// it sets, where each key is written, and the errors found.
type layer struct {
	file   string
	cfg    *Config        // only keys present in the file are non-zero
	set    map[string]pos // every key path the file writes, tables included
	leaves []leaf         // every setting, in document order
	errs   errList
	// sandboxErrs are the problems inside [sandbox]; they do not fail the
	// load but put the sandbox in lockdown.
	sandboxErrs errList
	warnings    []string
}

// A leaf is one setting: a scalar, a list, or one entry of a map of scalars.
// Lists of tables ([[hooks.post_edit]]) are one leaf.
type leaf struct {
	path    string // e.g. security.tool_policy.tools.run_command
	written string // the path as written, before alias normalisation
	pattern string // map keys replaced by *: security.tool_policy.tools.*
	p       pos
	n       *node
}

func (l *layer) has(path string) bool { _, ok := l.set[path]; return ok }

// at is the position of path, or of its closest written parent.
func (l *layer) at(path string) pos {
	for {
		if p, ok := l.set[path]; ok {
			return p
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return pos{}
		}
		path = path[:i]
	}
}

func (l *layer) errsFor(path string) *errList {
	if path == "sandbox" || strings.HasPrefix(path, "sandbox.") {
		return &l.sandboxErrs
	}
	return &l.errs
}

// decodeLayer decodes a parsed document into a fresh Config, collecting every
// unknown key and wrong type rather than stopping at the first.
func decodeLayer(file string, root *node) *layer {
	l := &layer{file: file, cfg: &Config{}, set: map[string]pos{}}
	l.errs.file, l.sandboxErrs.file = file, file
	l.decode(reflect.ValueOf(l.cfg).Elem(), root, "", "", false)
	return l
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func joinKey(path, k string) string {
	if !plainKey.MatchString(k) {
		k = strconv.Quote(k)
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

// fieldByKey finds the struct field whose toml tag is key.
func fieldByKey(t reflect.Type, key string) (int, bool) {
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ","); tag == key && tag != "-" {
			return i, true
		}
	}
	return 0, false
}

func (l *layer) decode(v reflect.Value, n *node, path, pattern string, inList bool) {
	if path != "" {
		l.set[path] = n.p
	}
	errs := l.errsFor(path)
	mismatch := func(want string) {
		errs.add(n.p, path, n.display(), "expected %s, got %s", want, n.kind)
		delete(l.set, path) // so that no value check reads the zero value
	}
	record := func() {
		if !inList {
			l.leaves = append(l.leaves, leaf{path: path, written: path, pattern: pattern, p: n.p, n: n})
		}
	}
	switch v.Kind() {
	case reflect.Pointer:
		if n.kind != kTable && n.kind != kNull {
			mismatch("table")
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		l.decode(v.Elem(), n, path, pattern, inList)
	case reflect.Struct:
		if n.kind == kNull {
			return
		}
		if n.kind != kTable {
			mismatch("table")
			return
		}
		for _, k := range n.keys {
			i, ok := fieldByKey(v.Type(), k)
			if !ok {
				kp := joinKey(path, k)
				l.errsFor(kp).add(n.kpos[k], kp, "", "unknown key")
				continue
			}
			l.decode(v.Field(i), n.field[k], joinKey(path, k), joinKey(pattern, k), inList)
		}
	case reflect.Map:
		if n.kind == kNull {
			return
		}
		if n.kind != kTable {
			mismatch("table")
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.keys))
		for _, k := range n.keys {
			ev := reflect.New(v.Type().Elem()).Elem()
			if ev.Kind() == reflect.Struct && !inList {
				// The entry itself is a setting: [llm.prices.x] with no
				// keys still creates it.
				l.leaves = append(l.leaves, leaf{path: joinKey(path, k), written: joinKey(path, k), pattern: pattern + ".*", p: n.kpos[k], n: n.field[k]})
			}
			l.decode(ev, n.field[k], joinKey(path, k), pattern+".*", inList)
			m.SetMapIndex(reflect.ValueOf(k), ev)
		}
		v.Set(m)
	case reflect.Slice:
		if n.kind == kNull {
			record()
			return
		}
		if n.kind != kArray {
			mismatch("array")
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.items), len(n.items))
		for i, item := range n.items {
			l.decode(s.Index(i), item, fmt.Sprintf("%s[%d]", path, i), pattern+"[]", true)
		}
		v.Set(s)
		record()
	case reflect.String:
		if n.kind == kBool && v.Type() == networkModeType {
			v.SetString(networkFromBool(n.b)) // network = true | false, as before
			record()
			return
		}
		if n.kind != kString {
			mismatch("string")
			return
		}
		v.SetString(n.s)
		record()
	case reflect.Bool:
		if n.kind != kBool {
			mismatch("boolean")
			return
		}
		v.SetBool(n.b)
		record()
	case reflect.Int, reflect.Int64:
		if n.kind != kInt {
			mismatch("integer")
			return
		}
		if v.OverflowInt(n.i) {
			errs.add(n.p, path, n.display(), "integer out of range")
			delete(l.set, path)
			return
		}
		v.SetInt(n.i)
		record()
	case reflect.Float64:
		switch n.kind {
		case kFloat:
			v.SetFloat(n.f)
		case kInt:
			v.SetFloat(float64(n.i))
		default:
			mismatch("number")
			return
		}
		record()
	default:
		errs.add(n.p, path, "", "internal error: unsupported field type %s", v.Type())
	}
}

func unquote(k string) (string, error) {
	if strings.HasPrefix(k, `"`) {
		return strconv.Unquote(k)
	}
	return k, nil
}
