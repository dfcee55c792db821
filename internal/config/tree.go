package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
	"go.yaml.in/yaml/v3"
)

// A node is one value of a configuration document with its position. TOML
// and YAML documents are both turned into nodes, so that one schema decoder
// (decode.go) gives both formats identical rules and identical messages.
type node struct {
	kind  kind
	p     pos // where the value is written (its key when it has no position)
	s     string
	i     int64
	f     float64
	b     bool
	keys  []string // table: keys in document order
	field map[string]*node
	kpos  map[string]pos // table: where each key is written
	items []*node        // array
}

type kind uint8

const (
	kNull kind = iota
	kString
	kInt
	kFloat
	kBool
	kTime
	kTable
	kArray
)

func (k kind) String() string {
	return [...]string{"null", "string", "integer", "float", "boolean", "date-time", "table", "array"}[k]
}

func newTable(p pos) *node {
	return &node{kind: kTable, p: p, field: map[string]*node{}, kpos: map[string]pos{}}
}

func (n *node) put(k string, kp pos, v *node) {
	n.keys = append(n.keys, k)
	n.field[k] = v
	n.kpos[k] = kp
}

// display renders a scalar the way a user would write it, for messages.
func (n *node) display() string {
	switch n.kind {
	case kString:
		return strconv.Quote(n.s)
	case kInt:
		return strconv.FormatInt(n.i, 10)
	case kFloat:
		return strconv.FormatFloat(n.f, 'g', -1, 64)
	case kBool:
		return strconv.FormatBool(n.b)
	case kNull:
		return "null"
	}
	return ""
}

// parseTOML turns a TOML document into nodes. Document-level errors (syntax,
// duplicate keys, redefined tables) are reported by go-toml itself, with its
// position; they end the parse.
func parseTOML(file string, data []byte) (*node, error) {
	var m map[string]any
	if err := toml.Unmarshal(data, &m); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			return nil, &Errors{List: []*Error{{File: file, Line: line, Col: col, Key: strings.Join(de.Key(), "."),
				Msg: strings.TrimPrefix(de.Error(), "toml: ")}}}
		}
		return nil, &Errors{List: []*Error{{File: file, Msg: err.Error()}}}
	}
	b := &tomlBuilder{file: file, root: newTable(pos{1, 1})}
	b.p.Reset(data)
	cur := b.root
	for b.p.NextExpression() {
		e := b.p.Expression()
		var err error
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			keys, kps := b.key(e.Key())
			cur, err = b.open(keys, kps, e.Kind == unstable.ArrayTable)
		case unstable.KeyValue:
			err = b.keyValue(cur, e)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := b.p.Error(); err != nil {
		return nil, b.errAt(err)
	}
	return b.root, nil
}

type tomlBuilder struct {
	file string
	p    unstable.Parser
	root *node
}

func (b *tomlBuilder) pos(n *unstable.Node) pos {
	if n.Raw.Length == 0 && n.Raw.Offset == 0 {
		return pos{}
	}
	s := b.p.Shape(n.Raw)
	return pos{s.Start.Line, s.Start.Column}
}

func (b *tomlBuilder) errAt(err error) error {
	var pe *unstable.ParserError
	if errors.As(err, &pe) && len(pe.Highlight) > 0 {
		s := b.p.Shape(b.p.Range(pe.Highlight))
		return &Errors{List: []*Error{{File: b.file, Line: s.Start.Line, Col: s.Start.Column, Msg: pe.Message}}}
	}
	return &Errors{List: []*Error{{File: b.file, Msg: err.Error()}}}
}

func (b *tomlBuilder) key(it unstable.Iterator) ([]string, []pos) {
	var keys []string
	var kps []pos
	for it.Next() {
		keys = append(keys, string(it.Node().Data))
		kps = append(kps, b.pos(it.Node()))
	}
	return keys, kps
}

// open navigates to (creating as needed) the table named by a [header] or
// [[header]]. go-toml has already refused redefinitions.
func (b *tomlBuilder) open(keys []string, kps []pos, arrayTable bool) (*node, error) {
	t := b.root
	for i, k := range keys {
		last := i == len(keys)-1
		child := t.field[k]
		switch {
		case child == nil && last && arrayTable:
			child = &node{kind: kArray, p: kps[i]}
			t.put(k, kps[i], child)
		case child == nil:
			child = newTable(kps[i])
			t.put(k, kps[i], child)
		}
		if last && arrayTable {
			if child.kind != kArray {
				return nil, &Errors{List: []*Error{{File: b.file, Line: kps[i].line, Col: kps[i].col, Key: strings.Join(keys, "."), Msg: "not an array of tables"}}}
			}
			nt := newTable(kps[i])
			child.items = append(child.items, nt)
			return nt, nil
		}
		if child.kind == kArray && len(child.items) > 0 {
			child = child.items[len(child.items)-1]
		}
		if child.kind != kTable {
			return nil, &Errors{List: []*Error{{File: b.file, Line: kps[i].line, Col: kps[i].col, Key: strings.Join(keys[:i+1], "."), Msg: "already defined as a value"}}}
		}
		t = child
	}
	return t, nil
}

func (b *tomlBuilder) keyValue(t *node, e *unstable.Node) error {
	keys, kps := b.key(e.Key())
	for i, k := range keys[:len(keys)-1] {
		child := t.field[k]
		if child == nil {
			child = newTable(kps[i])
			t.put(k, kps[i], child)
		}
		if child.kind != kTable {
			return &Errors{List: []*Error{{File: b.file, Line: kps[i].line, Col: kps[i].col, Key: strings.Join(keys[:i+1], "."), Msg: "already defined as a value"}}}
		}
		t = child
	}
	k, kp := keys[len(keys)-1], kps[len(keys)-1]
	if _, dup := t.field[k]; dup {
		return &Errors{List: []*Error{{File: b.file, Line: kp.line, Col: kp.col, Key: strings.Join(keys, "."), Msg: "duplicate key"}}}
	}
	v, err := b.value(e.Value(), kp)
	if err != nil {
		return err
	}
	t.put(k, kp, v)
	return nil
}

func (b *tomlBuilder) value(v *unstable.Node, keyPos pos) (*node, error) {
	p := b.pos(v)
	if p == (pos{}) {
		p = keyPos
	}
	n := &node{p: p}
	var err error
	switch v.Kind {
	case unstable.String:
		n.kind, n.s = kString, string(v.Data)
	case unstable.Bool:
		n.kind, n.b = kBool, string(v.Data) == "true"
	case unstable.Integer:
		n.kind = kInt
		n.i, err = tomlInt(string(v.Data))
	case unstable.Float:
		n.kind = kFloat
		n.f, err = tomlFloat(string(v.Data))
	case unstable.LocalDate, unstable.LocalTime, unstable.LocalDateTime, unstable.DateTime:
		n.kind, n.s = kTime, string(v.Data)
	case unstable.Array:
		n.kind = kArray
		it := v.Children()
		for it.Next() {
			item, err := b.value(it.Node(), p)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, item)
		}
	case unstable.InlineTable:
		n = newTable(p)
		it := v.Children()
		for it.Next() {
			if err := b.keyValue(n, it.Node()); err != nil {
				return nil, err
			}
		}
	default:
		return nil, &Errors{List: []*Error{{File: b.file, Line: p.line, Col: p.col, Msg: fmt.Sprintf("unexpected %s", v.Kind)}}}
	}
	if err != nil {
		return nil, &Errors{List: []*Error{{File: b.file, Line: p.line, Col: p.col, Value: string(v.Data), Msg: err.Error()}}}
	}
	return n, nil
}

func tomlInt(s string) (int64, error) {
	s = strings.ReplaceAll(s, "_", "")
	base := 10
	if len(s) > 2 && s[0] == '0' {
		switch s[1] {
		case 'x':
			base = 16
		case 'o':
			base = 8
		case 'b':
			base = 2
		}
		if base != 10 {
			s = s[2:]
		}
	}
	i, err := strconv.ParseInt(s, base, 64)
	if err != nil {
		return 0, errors.New("integer out of range")
	}
	return i, nil
}

func tomlFloat(s string) (float64, error) {
	s = strings.ReplaceAll(s, "_", "")
	switch strings.TrimLeft(s, "+-") {
	case "nan", "inf":
		s = strings.Replace(s, "nan", "NaN", 1)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, errors.New("invalid float")
	}
	return f, nil
}

var yamlLine = regexp.MustCompile(`line (\d+)(?:: column (\d+))?`)

// parseYAML turns a YAML document into nodes. Aliases, merge keys and custom
// tags are refused: a configuration file that enforces security settings is
// read as plainly as possible.
func parseYAML(file string, data []byte) (*node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return newTable(pos{1, 1}), nil
		}
		return nil, yamlErr(file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, yamlErr(file, err)
		}
		return nil, &Errors{List: []*Error{{File: file, Line: extra.Line, Col: extra.Column, Msg: "more than one YAML document"}}}
	}
	y := &yamlBuilder{errs: errList{file: file}}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	n := y.value(root)
	if n != nil && n.kind == kNull {
		n = newTable(pos{root.Line, root.Column})
	}
	if len(y.errs.list) > 0 {
		return nil, y.errs.err()
	}
	if n.kind != kTable {
		return nil, &Errors{List: []*Error{{File: file, Line: root.Line, Col: root.Column, Msg: "the document must be a mapping of sections"}}}
	}
	return n, nil
}

func yamlErr(file string, err error) error {
	e := &Error{File: file, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		if m[2] != "" {
			e.Col, _ = strconv.Atoi(m[2])
		}
		e.Msg = strings.TrimPrefix(strings.TrimPrefix(e.Msg, m[0]), ": ")
	}
	return &Errors{List: []*Error{e}}
}

type yamlBuilder struct {
	errs errList
}

func (y *yamlBuilder) fail(n *yaml.Node, format string, a ...any) *node {
	y.errs.list = append(y.errs.list, &Error{File: y.errs.file, Line: n.Line, Col: n.Column, Msg: fmt.Sprintf(format, a...)})
	return &node{kind: kNull, p: pos{n.Line, n.Column}}
}

func (y *yamlBuilder) value(n *yaml.Node) *node {
	p := pos{n.Line, n.Column}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		return y.fail(n, "custom YAML tag %s is not supported", n.Tag)
	}
	switch n.Kind {
	case yaml.AliasNode:
		return y.fail(n, "YAML aliases are not supported in warden configuration")
	case yaml.MappingNode:
		t := newTable(p)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				y.fail(k, "a key must be a plain string")
				continue
			}
			if k.ShortTag() == "!!merge" {
				y.fail(k, "YAML merge keys (<<) are not supported in warden configuration")
				continue
			}
			if k.ShortTag() != "!!str" {
				y.fail(k, "a key must be a string, not %s %q (quote it)", strings.TrimPrefix(k.ShortTag(), "!!"), k.Value)
				continue
			}
			if _, dup := t.field[k.Value]; dup {
				first := t.kpos[k.Value]
				y.errs.list = append(y.errs.list, &Error{File: y.errs.file, Line: k.Line, Col: k.Column, Key: k.Value,
					Msg: fmt.Sprintf("duplicate key (first defined at line %d)", first.line)})
				continue
			}
			t.put(k.Value, pos{k.Line, k.Column}, y.value(v))
		}
		return t
	case yaml.SequenceNode:
		a := &node{kind: kArray, p: p}
		for _, c := range n.Content {
			a.items = append(a.items, y.value(c))
		}
		return a
	case yaml.ScalarNode:
		out := &node{p: p}
		var err error
		switch n.ShortTag() {
		case "!!null":
			out.kind = kNull
		case "!!bool":
			out.kind = kBool
			err = n.Decode(&out.b)
		case "!!int":
			out.kind = kInt
			err = n.Decode(&out.i)
		case "!!float":
			out.kind = kFloat
			err = n.Decode(&out.f)
		case "!!str":
			out.kind, out.s = kString, n.Value
		case "!!timestamp":
			out.kind, out.s = kTime, n.Value
		default:
			return y.fail(n, "unsupported YAML type %s", n.ShortTag())
		}
		if err != nil {
			return y.fail(n, "invalid %s %q", out.kind, n.Value)
		}
		return out
	}
	return y.fail(n, "unexpected YAML node")
}
