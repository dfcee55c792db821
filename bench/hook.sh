#!/usr/bin/env bash
# `warden hook` as an agent host runs it before every tool call: the whole
# process, event on stdin, answer on stdout, for calls that need no person
# (an allowed Read, a safe Bash), and `warden tool call read_file` (the same
# engine as a one-shot CLI call, which runs the tool too), against a minimal hook a user would write
# instead (python3 reading the event and allowing everything) and against an
# event warden passes without deciding (the process start). Prints medians
# and ratios.
#
#   bench/hook.sh              # RUNS=150
#   WARDEN=/path/to/old/warden bench/hook.sh   # another build, for before/after
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-150}
command -v hyperfine >/dev/null || { echo "bench/hook.sh needs hyperfine" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=${WARDEN:-$tmp/warden}
[ -n "${WARDEN:-}" ] || go build -o "$bin" ./cmd/warden
mkdir -p "$tmp/ws" "$tmp/home"
echo alpha > "$tmp/ws/a.txt"
printf '{"hook_event_name":"PreToolUse","session_id":"bench","cwd":"%s","tool_name":"Read","tool_input":{"file_path":"%s/a.txt"},"tool_use_id":"t"}\n' "$tmp/ws" "$tmp/ws" > "$tmp/read.json"
printf '{"hook_event_name":"PreToolUse","session_id":"bench","cwd":"%s","tool_name":"Bash","tool_input":{"command":"git status && ls -la"},"tool_use_id":"t"}\n' "$tmp/ws" > "$tmp/bash.json"
echo '{"hook_event_name":"SessionStart","session_id":"bench"}' > "$tmp/pass.json"
printf 'cd %s && exec %s tool call read_file --args %s\n' "$tmp/ws" "$bin" "'{\"path\":\"a.txt\"}'" > "$tmp/toolcall.sh"
cat > "$tmp/allow.py" <<'PY'
import json, sys
json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}))
PY
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
export HOME=$tmp/home XDG_CONFIG_HOME=$tmp/home/.config XDG_STATE_HOME=$tmp/home/.state
"$bin" hook claude-code < "$tmp/read.json" | grep -q '"allow"' || { echo "warden hook did not allow the Read" >&2; exit 1; }
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)  (2 shared cores: numbers move with the load)"
# No shell calibration (it is unreliable on a loaded machine): every
# command runs under sh -c, and sh -c true is measured in the same run and
# subtracted.
hyperfine -N --style none --warmup 5 --runs "$RUNS" --export-json "$tmp/h.json" \
	-n read "sh -c '$bin hook claude-code < $tmp/read.json'" \
	-n bash "sh -c '$bin hook claude-code < $tmp/bash.json'" \
	-n toolcall "sh $tmp/toolcall.sh" \
	-n python-allow-all "sh -c '$py $tmp/allow.py < $tmp/read.json'" \
	-n pass "sh -c '$bin hook claude-code < $tmp/pass.json'" \
	-n sh "sh -c true" >/dev/null
echo "# load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
"$py" - "$tmp/h.json" <<'PY'
import json, statistics, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
med = {k: statistics.median(v["times"]) * 1000 for k, v in r.items()}
cpu = {k: (v["user"] + v["system"]) * 1000 for k, v in r.items()}
for k in med:
    if k != "sh":
        med[k] -= med["sh"]
        cpu[k] -= cpu["sh"]
print(f"{'process (median, sh -c subtracted)':36} {'wall':>9} {'cpu':>9}")
for k, label in [("read", "warden hook: Read allowed"), ("bash", "warden hook: Bash safe"),
                 ("toolcall", "warden tool call read_file"),
                 ("python-allow-all", "python3 hook allowing everything"), ("pass", "warden hook: an event it passes")]:
    print(f"{label:36} {med[k]:7.2f} ms {cpu[k]:7.2f} ms")
print(f"{'(sh -c true itself)':36} {med['sh']:7.2f} ms {cpu['sh']:7.2f} ms")
print()
print(f"read / python3 allow-all = {med['read'] / med['python-allow-all']:5.2f}x   (goal: read median <= 15 ms: {med['read']:.2f} ms)")
print(f"tool call read_file       = {med['toolcall']:5.2f} ms  (goal <= 15 ms)")
print(f"read - pass              = {med['read'] - med['pass']:5.2f} ms  (what deciding a call costs over starting)")
PY
