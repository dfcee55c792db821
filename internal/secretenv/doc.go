// Package secretenv keeps the secrets a warden process read from its
// environment — supervisors' tokens, MCP clients' tokens, API keys, channel
// secrets — out of reach of the user's other processes, among them the
// commands an agent runs.
//
// A process's environment is visible to every process of the same user in
// two places: /proc/PID/environ (what `ps e` prints), which the kernel reads
// from the block of memory the environment was placed in at exec, and the
// process's memory itself (/proc/PID/mem, ptrace), where Go keeps its copy.
// os.Unsetenv changes neither: it edits Go's copy, and the block stays as
// exec left it.
//
// Protect closes both:
//
//   - it overwrites the initial environment block with zero bytes, through
//     /proc/self/mem (a process may always write its own memory), so
//     /proc/PID/environ reads as empty. The block's bounds (env_start and
//     env_end in /proc/self/stat) stay as they are: moving them
//     (prctl PR_SET_MM_ENV_START) needs CAP_SYS_RESOURCE. Go's copy of the
//     environment, which os.Getenv, child processes and the log redactor
//     read, is untouched.
//   - it marks the process non-dumpable (prctl PR_SET_DUMPABLE 0): the
//     kernel then refuses /proc/PID/mem, /proc/PID/environ, /proc/PID/maps
//     and ptrace to processes without CAP_SYS_PTRACE — to every process of
//     the same user — and writes no core dump.
//
// # Not covered
//
// Root, or any process with CAP_SYS_PTRACE, still reads everything; so
// does a process that can replace the warden binary or its configuration
// before it starts, or read the file or shell profile the secret came from
// (see the approval package's threat model: without a jail, a command an
// agent runs can do what the user can). The environment of the process
// that started warden (a shell, an agent host) is its own. A child process
// warden starts gets only the environment warden gives it: commands get an
// allowlist, and the dumpable flag goes back to normal at its exec.
package secretenv
