package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/google/jsonschema-go/jsonschema"
)

// findMaxResults caps find_files' output.
const findMaxResults = 500

type findArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

// FindFiles returns the find_files tool.
func FindFiles() *Tool {
	return &Tool{
		Name: "find_files",
		Description: "Find files by name or path with a glob. A pattern without \"/\" matches file names anywhere below path " +
			"(\"*.go\", \"README*\", \"*_{test,bench}.go\"); a pattern with \"/\" matches paths relative to path, with \"**\" " +
			"for any number of directories (\"cmd/**/*.go\", \"**/testdata/*.json\"). Prints workspace-relative paths sorted, one per line. " +
			"Entries ignored by .gitignore, the .git directory and hidden secrets (such as .env) are left out; symbolic links " +
			fmt.Sprintf("are listed (marked \"@\") but not followed. At most %d paths are shown; a last line counts the rest.", findMaxResults),
		Group:       GroupFSRead,
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		Schema: &jsonschema.Schema{
			Type: "object",
			Properties: map[string]*jsonschema.Schema{
				"pattern": {Type: "string", Description: "glob (doublestar syntax: * ? [abc] {a,b} **)", MinLength: jsonschema.Ptr(1), MaxLength: jsonschema.Ptr(1024)},
				"path":    {Type: "string", Description: "workspace-relative directory to search under (default: the workspace root)"},
			},
			Required:             []string{"pattern"},
			AdditionalProperties: noExtra(),
		},
		Guard: guardPathArg[findArgs]("find", func(a findArgs) string { return a.Path }),
		Run:   runFindFiles,
	}
}

func runFindFiles(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
	a, err := decodeArgs[findArgs](raw)
	if err != nil {
		return "", err
	}
	pattern := strings.TrimPrefix(a.Pattern, "./")
	if pattern == "" || !doublestar.ValidatePattern(pattern) || strings.HasPrefix(pattern, "/") {
		return "", fmt.Errorf("find_files: pattern %q is not a valid relative glob", a.Pattern)
	}
	byName := !strings.Contains(pattern, "/")
	root, err := cleanRel(a.Path)
	if err != nil {
		return "", fmt.Errorf("find_files: %w", err)
	}
	var mu sync.Mutex
	var found []string
	st, err := walkTree(ctx, env.FS, root, walkOptions{
		onEntry: func(e *entry) {
			if e.typ.IsDir() {
				return
			}
			subject := e.rel
			if byName || e.depth == 0 {
				subject = path.Base(e.rel)
			} else if root != "." {
				subject = strings.TrimPrefix(e.rel, root+"/")
			}
			if ok, _ := doublestar.Match(pattern, subject); !ok {
				return
			}
			name := e.rel
			if e.typ&fs.ModeSymlink != 0 {
				name += "@"
			}
			mu.Lock()
			found = append(found, name)
			mu.Unlock()
		},
	})
	if err != nil {
		return "", fmt.Errorf("find_files: %w", err)
	}
	slices.SortFunc(found, comparePaths)
	var b strings.Builder
	for i, p := range found {
		if i == findMaxResults {
			break
		}
		b.WriteString(p)
		b.WriteByte('\n')
	}
	if len(found) == 0 {
		fmt.Fprintf(&b, "No files match %q under %s.\n", a.Pattern, displayDir(st.root))
	}
	if n := len(found) - findMaxResults; n > 0 {
		fmt.Fprintf(&b, "[%d more paths not shown; narrow the pattern or path]\n", n)
	}
	b.WriteString(st.notes())
	return b.String(), nil
}
