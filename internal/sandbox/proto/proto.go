package proto

import (
	"io/fs"
	"time"

	"github.com/wardenhq/warden/internal/command"
)

// MaxLineBytes bounds one protocol line in either direction (64 MiB). A
// request line longer than that is answered with an error of kind
// "too_large" and skipped; file contents travel base64-encoded, so the
// largest file read_file or write_file carries is smaller
// (MaxFileBytes, 32 MiB, leaving room for base64 and JSON).
const MaxLineBytes = 64 << 20

// MaxFileBytes is the largest file content one request or response carries.
const MaxFileBytes = 32 << 20

// MaxWalkEntries bounds one walk response.
const MaxWalkEntries = 200_000

// Operations of the worker protocol.
const (
	OpPing      = "ping"
	OpExec      = "exec"
	OpReadFile  = "read_file"
	OpWriteFile = "write_file"
	OpStat      = "stat"
	OpLstat     = "lstat"
	OpDirPath   = "dirpath"
	OpList      = "list"
	OpWalk      = "walk"
	OpRemove    = "remove"
	OpMkdir     = "mkdir"
	OpRename    = "rename"
	// Streams (see "Streams" below): spawn starts a long-lived process
	// whose stdin and stdout cross the protocol in chunks.
	OpSpawn = "spawn"
	OpStdin = "stdin"
	OpAck   = "ack"
	OpKill  = "kill"
)

// Events a worker sends about a stream, unasked: a Response line with ID 0,
// Stream set and Event naming what happened.
const (
	// EventStdout carries a chunk of the process's stdout in Data (at most
	// StreamChunk bytes).
	EventStdout = "stdout"
	// EventExit is the stream's last line: the process ended (and its stdout
	// was sent whole, or dropped after a kill); Exit holds its status.
	EventExit = "exit"
)

// # Streams
//
// Besides request and response, the protocol carries long-lived processes
// (a stdio MCP server in the jail):
//
//   - spawn (argv, cwd, env as for exec; no shell) starts the process in its
//     own process group and answers {"stream": ID}, where ID is the spawn
//     request's own id. Its stderr goes to the worker's stderr, which the
//     host logs. At most MaxStreams streams live at once.
//   - stdin (stream, data of at most StreamChunk bytes, eof) writes to the
//     process's stdin and is answered once written, so a client that waits
//     for the answer before its next write never makes the worker buffer
//     more than one chunk (a process that does not read its stdin blocks the
//     writer, not the worker). At most StreamStdinQueue writes of one stream
//     may wait; more are refused.
//   - The worker sends stdout as events ({"id":0,"stream":ID,"event":"stdout",
//     "data":…}, chunks of at most StreamChunk bytes) and stops reading the
//     process's stdout once StreamWindow bytes are unacknowledged: the
//     process then blocks on its own pipe. ack (stream, ack: bytes consumed)
//     gives the window back.
//   - kill (stream) kills the process group; what it still writes is dropped.
//   - The last line of a stream is {"id":0,"stream":ID,"event":"exit",
//     "exit":N}, after every stdout event of it. A stream is also killed when
//     the worker's input ends (the client closed it or died) and, with the
//     whole jail, when the worker is reset.
//
// Events and responses share the worker's output: a client reads them in
// one loop and must never block that loop on a stream's consumer.

// Request is one line from the client to the worker. ID is chosen by the
// client (non-zero, unique among its requests in flight); the worker echoes
// it in the Response. Which other fields matter depends on Op.
type Request struct {
	ID   uint64 `json:"id"`
	Op   string `json:"op"`
	Path string `json:"path,omitempty"`
	// NewPath is the destination of rename.
	NewPath string `json:"new_path,omitempty"`
	// Data is the content of write_file (base64 on the wire).
	Data []byte `json:"data,omitempty"`
	// Perm is the mode of a file or directory created by write_file or mkdir.
	Perm uint32 `json:"perm,omitempty"`
	// Limit caps read_file (0: MaxFileBytes).
	Limit int64 `json:"limit,omitempty"`

	// exec: exactly one of Argv and Shell.
	Argv  []string `json:"argv,omitempty"`
	Shell string   `json:"shell,omitempty"`
	// Cwd is workspace-relative ("" or "." for the workspace).
	Cwd string `json:"cwd,omitempty"`
	// Env is the complete environment; empty means the worker's own
	// (allowlisted) environment.
	Env            []string `json:"env,omitempty"`
	TimeoutMS      int64    `json:"timeout_ms,omitempty"`
	MaxOutputLines int      `json:"max_output_lines,omitempty"`

	// Stream names the stream of stdin, ack and kill (the id of the spawn
	// request that started it).
	Stream uint64 `json:"stream,omitempty"`
	// EOF, on stdin, closes the process's stdin after Data is written.
	EOF bool `json:"eof,omitempty"`
	// Ack, on ack, is how many bytes of the stream's stdout the client has
	// consumed since its last ack: the worker sends at most StreamWindow
	// bytes ahead of what was acknowledged.
	Ack int64 `json:"ack,omitempty"`
}

// Response is one line from the worker to the client: OK with the fields of
// the operation, or Error.
type Response struct {
	ID      uint64          `json:"id"`
	OK      bool            `json:"ok"`
	Error   *WireError      `json:"error,omitempty"`
	Data    []byte          `json:"data,omitempty"`
	Info    *WireInfo       `json:"info,omitempty"`
	Entries []WireInfo      `json:"entries,omitempty"`
	Exec    *command.Result `json:"exec,omitempty"`
	Hello   *Hello          `json:"hello,omitempty"`
	// Path is the answer to dirpath: the directory's path in the jail,
	// which is also its host path (the workspace is bound at its own path).
	Path string `json:"path,omitempty"`
	// Stream is the stream a spawn started, or the stream of an event.
	Stream uint64 `json:"stream,omitempty"`
	// Event is set on an event line (ID 0): EventStdout or EventExit.
	Event string `json:"event,omitempty"`
	// Exit is the exit status of EventExit (128+n for a signal).
	Exit *int `json:"exit,omitempty"`
}

// Hello is the answer to ping: what the worker knows about its own jail.
type Hello struct {
	PID int `json:"pid"`
	// Landlock is "enforced (ABI n)", "off", or "unavailable: why".
	Landlock string `json:"landlock"`
	// Seccomp is read from /proc/self/status: "filter" when a seccomp
	// filter is installed on the worker, else "none".
	Seccomp string `json:"seccomp"`
	// NoNewPrivs is the worker's no_new_privs bit.
	NoNewPrivs bool `json:"no_new_privs"`
	// Rlimits are the limits the worker set on itself (and its commands).
	Rlimits map[string]uint64 `json:"rlimits,omitempty"`
}

// WireInfo is a file's metadata; for walk, Path is workspace-relative and
// Err reports a directory that could not be read.
type WireInfo struct {
	Path    string      `json:"path,omitempty"`
	Name    string      `json:"name"`
	Size    int64       `json:"size"`
	Mode    fs.FileMode `json:"mode"`
	ModTime time.Time   `json:"mtime"`
	Err     *WireError  `json:"err,omitempty"`
	// NoEntry marks a walk call made without a directory entry (the start
	// of the walk could not be read).
	NoEntry bool `json:"no_entry,omitempty"`
}

// Error kinds on the wire. Each maps to a sentinel on the client so that
// errors.Is works across the jail boundary.
const (
	KindEscapes    = "escapes"
	KindMasked     = "masked"
	KindProtected  = "protected"
	KindInvalid    = "invalid"
	KindTooLarge   = "too_large"
	KindHardLink   = "hard_link"
	KindSymlink    = "symlink"
	KindNotRegular = "not_regular"
	KindNotExist   = "not_exist"
	KindExist      = "exist"
	KindPermission = "permission"
	KindNotDir     = "not_dir"
	KindIsDir      = "is_dir"
	KindNotEmpty   = "not_empty"
	KindReadOnly   = "read_only"
	KindBadRequest = "bad_request"
	KindExec       = "exec"
	KindClosed     = "closed" // a stream's process no longer reads its stdin
	KindOther      = "other"
)

// WireError is an error crossing the protocol. For a workspace refusal, Op,
// Path and Rule are those of the *workspace.PathError and Message is the
// text of its inner error.
type WireError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Op      string `json:"op,omitempty"`
	Path    string `json:"path,omitempty"`
	Rule    string `json:"rule,omitempty"`
}
