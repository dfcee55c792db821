package proto

import "time"

// Bounds of exec requests.
const (
	DefaultExecTimeout = 30 * time.Second
	MaxExecTimeout     = 600 * time.Second
)

// Bounds of a stream (see "Streams").
const (
	// StreamChunk is the most one stdin request or stdout event carries.
	StreamChunk = 64 << 10
	// StreamWindow is how far the worker reads a process's stdout ahead of
	// what the client acknowledged.
	StreamWindow = 256 << 10
	// StreamStdinQueue is how many stdin writes of one stream may wait.
	StreamStdinQueue = 4
	// MaxStreams bounds the live streams of one worker.
	MaxStreams = 64
)

// WorkerSpec is what the host tells `warden worker` about its jail. It is
// passed as one JSON argument (--spec); it holds no secrets.
type WorkerSpec struct {
	Workspace string   `json:"workspace"`
	Mask      []string `json:"mask,omitempty"`
	Protected []string `json:"protected,omitempty"`
	Lockdown  bool     `json:"lockdown,omitempty"`
	Landlock  string   `json:"landlock"`
	// Writable and Readable are the jail paths Landlock lets the worker
	// (and its commands) write, and read and execute, beyond the system
	// paths internal/sandbox/landlock always allows.
	Writable []string `json:"writable"`
	Readable []string `json:"readable,omitempty"`
	// Seccomp asks the worker to install warden's own seccomp filter on
	// itself (and so on everything it runs), on top of whatever filter its
	// jail already has: the docker backend's profile goes through
	// libseccomp, which drops system calls it does not know.
	Seccomp bool `json:"seccomp,omitempty"`
	// Egress is set under network = "allowlist": the worker starts the
	// egress relay on the jail's loopback (internal/egress/relay), and
	// these variables (the proxy and CA variables, the brokered secrets'
	// placeholders: nothing secret) are set for every command it runs,
	// whatever environment the request brings.
	Egress []string `json:"egress,omitempty"`
}

// JailSpec is what the ssh backend tells `warden worker --jail` on the
// remote host (--sandbox): the [sandbox] settings as the local host
// resolved them, and the security settings the jail needs. It travels on
// the command line and holds no secrets: Env has already been through the
// environment allowlist. Its fields are the wire format, kept apart from
// the configuration's types so that renaming a configuration key does not
// change what crosses to a remote host (an older or newer warden there).
type JailSpec struct {
	Sandbox      JailSandbox `json:"sandbox"`
	Mask         []string    `json:"mask,omitempty"`
	Protected    []string    `json:"protected,omitempty"`
	EnvAllowlist []string    `json:"env_allowlist,omitempty"`
	Env          []string    `json:"env,omitempty"`
}

// JailSandbox is the [sandbox] part of a JailSpec. Enabled must be true
// and Backend "local": the remote side only ever builds a bubblewrap jail.
type JailSandbox struct {
	Enabled     bool     `json:"enabled"`
	Backend     string   `json:"backend"`
	RWPaths     []string `json:"rw_paths"`
	ROPaths     []string `json:"ro_paths"`
	Mask        []string `json:"mask"`
	NoGPU       bool     `json:"no_gpu"`
	Lockdown    bool     `json:"lockdown"`
	Network     bool     `json:"network"`
	Landlock    string   `json:"landlock"`
	IdleTimeout int      `json:"idle_timeout"`
}
