package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Checkpoint describes one recorded state of the workspace: the state just
// before a call ran (Reason "call"), or just before an undo (Reason
// "undo"). Its record is written last, after every object it names is
// durable: a checkpoint that is listed is complete.
type Checkpoint struct {
	Version int       `json:"version"`
	ID      string    `json:"id"`
	Seq     int64     `json:"seq"`
	Time    time.Time `json:"time"`
	Tree    string    `json:"tree"`
	Reason  string    `json:"reason"`
	Call    *Call     `json:"call,omitempty"`
	// UndoTo is, for an undo's checkpoint, the checkpoint it restored.
	UndoTo string `json:"undo_to,omitempty"`
	// Ignore and Gitignore are the rules the checkpoint was taken with; a
	// restore applies the same ones, so it leaves alone what was not
	// recorded.
	Ignore    []string `json:"ignore"`
	Gitignore bool     `json:"gitignore"`
	Files     int      `json:"files"`
	Bytes     int64    `json:"bytes"`
	// NewBytes is what this checkpoint added to the store.
	NewBytes int64 `json:"new_bytes"`
	// Skipped lists (up to maxSkips) paths seen but not recorded.
	Skipped      []Skip `json:"skipped,omitempty"`
	SkippedCount int    `json:"skipped_count,omitempty"`
	DurationMS   int64  `json:"duration_ms"`
	// Warnings are not stored: things that went wrong after the
	// checkpoint was committed (a failed prune).
	Warnings []string `json:"-"`
}

// Call is the tool call a checkpoint was taken for.
type Call struct {
	Tool      string `json:"tool"`
	Summary   string `json:"summary,omitempty"` // the command, or the path
	Session   string `json:"session,omitempty"`
	AuditID   string `json:"audit_id,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

// Reasons.
const (
	ReasonCall = "call"
	ReasonUndo = "undo"
)

const (
	recordVersion = 1
	maxSkips      = 50
	maxRecord     = 1 << 20
)

var (
	idPattern     = regexp.MustCompile(`^[0-9a-f]{12}$`)
	recordPattern = regexp.MustCompile(`^([0-9]{12})-([0-9a-f]{12})\.json$`)
)

// Note says what a checkpoint left out, in one line for the audit record
// ("" when it recorded everything).
func (c *Checkpoint) Note() string {
	if c.SkippedCount == 0 {
		return ""
	}
	var parts []string
	for i, sk := range c.Skipped {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", c.SkippedCount-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", sk.Path, sk.Why))
	}
	return fmt.Sprintf("not recorded: %s", strings.Join(parts, ", "))
}

func encodeRecord(c *Checkpoint) ([]byte, error) {
	return json.MarshalIndent(c, "", "  ")
}

// decodeRecord parses a checkpoint record strictly.
func decodeRecord(data []byte) (*Checkpoint, error) {
	if len(data) > maxRecord {
		return nil, corrupt("checkpoint record larger than %d bytes", maxRecord)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Checkpoint
	if err := dec.Decode(&c); err != nil {
		return nil, corrupt("checkpoint record: %v", err)
	}
	if dec.More() {
		return nil, corrupt("checkpoint record: data after the record")
	}
	switch {
	case c.Version != recordVersion:
		return nil, corrupt("checkpoint record version %d (this warden reads %d)", c.Version, recordVersion)
	case !idPattern.MatchString(c.ID):
		return nil, corrupt("checkpoint record has a bad id %q", c.ID)
	case c.Seq <= 0:
		return nil, corrupt("checkpoint %s has a bad sequence number %d", c.ID, c.Seq)
	case c.Reason != ReasonCall && c.Reason != ReasonUndo:
		return nil, corrupt("checkpoint %s has an unknown reason %q", c.ID, c.Reason)
	case c.UndoTo != "" && !idPattern.MatchString(c.UndoTo):
		return nil, corrupt("checkpoint %s has a bad undo_to %q", c.ID, c.UndoTo)
	case c.Files < 0 || c.Bytes < 0 || c.NewBytes < 0 || c.SkippedCount < len(c.Skipped):
		return nil, corrupt("checkpoint %s has bad counts", c.ID)
	}
	if _, err := parseHash(c.Tree); err != nil {
		return nil, corrupt("checkpoint %s: %v", c.ID, err)
	}
	return &c, nil
}

func (s *Store) recordsDir() string { return filepath.Join(s.dir, "records") }

func recordName(c *Checkpoint) string { return fmt.Sprintf("%012d-%s.json", c.Seq, c.ID) }

// writeRecord commits a checkpoint: the record file is written and synced
// under a temporary name and renamed into place, then the directory is
// synced.
func (s *Store) writeRecord(c *Checkpoint) error {
	data, err := encodeRecord(c)
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(s.recordsDir(), recordName(c)), data, true)
}

// recordFile is a record's file name, parsed.
type recordFile struct {
	name string
	seq  int64
	id   string
}

// recordFiles lists the record files, oldest first. Names that are not
// records (temporary files) are skipped.
func (s *Store) recordFiles() ([]recordFile, error) {
	ents, err := os.ReadDir(s.recordsDir())
	if err != nil {
		return nil, fmt.Errorf("failed to list checkpoints: %w", err)
	}
	var out []recordFile
	for _, e := range ents {
		m := recordPattern.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		seq, _ := strconv.ParseInt(m[1], 10, 64)
		out = append(out, recordFile{name: e.Name(), seq: seq, id: m[2]})
	}
	slices.SortFunc(out, func(a, b recordFile) int { return int(a.seq - b.seq) })
	return out, nil
}

func (s *Store) readRecord(rf recordFile) (*Checkpoint, error) {
	data, err := os.ReadFile(filepath.Join(s.recordsDir(), rf.name))
	if err != nil {
		return nil, fmt.Errorf("failed to read checkpoint %s: %w", rf.id, err)
	}
	c, err := decodeRecord(data)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", rf.id, err)
	}
	if c.ID != rf.id || c.Seq != rf.seq {
		return nil, corrupt("record %s holds checkpoint %s (seq %d)", rf.name, c.ID, c.Seq)
	}
	return c, nil
}

// List returns the workspace's checkpoints, oldest first.
func (s *Store) List() ([]*Checkpoint, error) {
	rfs, err := s.recordFiles()
	if err != nil {
		return nil, err
	}
	out := make([]*Checkpoint, 0, len(rfs))
	for _, rf := range rfs {
		c, err := s.readRecord(rf)
		if errors.Is(err, fs.ErrNotExist) {
			continue // pruned while we listed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// MinPrefix is the shortest id prefix Get accepts.
const MinPrefix = 6

// Get returns the checkpoint whose id is id or starts with id (at least
// MinPrefix characters).
func (s *Store) Get(id string) (*Checkpoint, error) {
	id = strings.ToLower(strings.TrimSpace(id))
	if len(id) < MinPrefix || len(id) > 12 || strings.Trim(id, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("%w: %q (give at least %d hex digits of an id from `warden checkpoints list`)", ErrNotFound, id, MinPrefix)
	}
	rfs, err := s.recordFiles()
	if err != nil {
		return nil, err
	}
	var hits []recordFile
	for _, rf := range rfs {
		if strings.HasPrefix(rf.id, id) {
			hits = append(hits, rf)
		}
	}
	switch len(hits) {
	case 0:
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	case 1:
		return s.readRecord(hits[0])
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.id
	}
	return nil, fmt.Errorf("%w: %s matches %s", ErrAmbiguous, id, strings.Join(ids, ", "))
}

// next returns the checkpoint after c, or nil when c is the newest.
func (s *Store) next(c *Checkpoint) (*Checkpoint, error) {
	rfs, err := s.recordFiles()
	if err != nil {
		return nil, err
	}
	for _, rf := range rfs {
		if rf.seq > c.Seq {
			return s.readRecord(rf)
		}
	}
	return nil, nil
}
