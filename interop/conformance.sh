#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in conformance/package-lock.json) against "agentmail mcp
# --transport http": the requirement sets of 2025-11-25 and 2026-07-28,
# and the two pending HTTP scenarios that apply to this server. It prints
# the suite's summaries and fails on any failure not listed in
# conformance/expected-failures.yaml, which lists the scenarios that need
# the suite's own fixtures (docs/http.md says why for each) and the
# server's known defects, and on any listed one that passes.
#
# The suite sends no headers of its own, so it cannot name an agent (or
# send a token). The server runs with --no-token on loopback, and
# cmd/headerproxy, between the suite and the server, adds
# "Agentmail-Pane: <alice's pane>" to each request: the server itself
# keeps its defaults, and gives no request a default agent.
#
# The suite needs Node 22 or later; conformance/ installs it from the npm
# registry (the "node" package) beside the suite, so the system's node and
# npm only run npm. The binary is $AGENTMAIL_BIN, or one built from the
# parent directory. Needs tmux, npm and go; a missing one is a failure,
# under CI=true and elsewhere, since nothing was checked.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
conf="$here/conformance"

fail() {
	echo "conformance: FAIL: $*" >&2
	exit 1
}

for tool in tmux npm go; do
	command -v "$tool" >/dev/null 2>&1 || fail "$tool is required but not installed"
done

work=$(mktemp -d /tmp/amconfXXXXXX)
sock="$work/s"
server_pid="" proxy_pid=""
cleanup() {
	[ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	tmux -S "$sock" kill-server 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

bin="${AGENTMAIL_BIN:-}"
if [ -z "$bin" ]; then
	bin="$work/agentmail"
	(cd "$here/.." && go build -o "$bin" .)
fi
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
[ -x "$bin" ] || fail "no agentmail binary at $bin"

# The suite and its Node are installed once per lock file: a fresh clone
# installs them, a second run reuses them while their versions match.
suite_version=$(sed -n 's/.*"@modelcontextprotocol\/conformance": "\(.*\)".*/\1/p' "$conf/package.json")
node_version=$(sed -n 's/.*"node": "\([0-9.]*\)".*/\1/p' "$conf/package.json")
node="$conf/node_modules/.bin/node"
suite="$conf/node_modules/@modelcontextprotocol/conformance/dist/index.js"
installed() {
	[ -x "$node" ] && [ -f "$suite" ] &&
		[ "$("$node" --version 2>/dev/null)" = "v$node_version" ] &&
		[ "$("$node" "$suite" --version 2>/dev/null)" = "$suite_version" ]
}
if ! installed; then
	echo "conformance: installing the suite $suite_version and node $node_version (npm ci)"
	(cd "$conf" && npm ci --no-audit --no-fund --loglevel=error) >"$work/npm.log" 2>&1 ||
		{ cat "$work/npm.log" >&2; fail "npm ci in $conf failed"; }
	installed || fail "after npm ci, $node is not node $node_version or the suite is not $suite_version"
fi

(cd "$here" && go build -o "$work/headerproxy" ./cmd/headerproxy)

mkdir -p "$work/root/.git"
alice=$(tmux -S "$sock" -f /dev/null new-session -d -s proj -x 200 -y 50 -n alice -P -F '#{pane_id}' cat)
tmux -S "$sock" new-window -d -t proj: -n bob cat
# The server runs in a window of the session whose agents it serves, as
# a user would start it; exec makes the pane's process the server.
server_pid=$(tmux -S "$sock" new-window -d -t proj: -n server -P -F '#{pane_pid}' \
	"cd '$work/root' && exec '$bin' mcp --transport http --port 0 --no-token 2>'$work/server.err'")
url=""
for _ in $(seq 100); do
	url=$(sed -n 's/^agentmail mcp: serving Streamable HTTP at \(http:[^ ]*\)$/\1/p' "$work/server.err" 2>/dev/null)
	[ -n "$url" ] && break
	sleep 0.1
done
[ -n "$url" ] || fail "the server did not print its URL: $(cat "$work/server.err" 2>/dev/null)"
path="/${url#http://*/}"

"$work/headerproxy" -target "${url%"$path"}" -H "Agentmail-Pane: $alice" >"$work/proxy.url" 2>"$work/proxy.err" &
proxy_pid=$!
proxy=""
for _ in $(seq 100); do
	proxy=$(head -n 1 "$work/proxy.url")
	[ -n "$proxy" ] && break
	sleep 0.1
done
[ -n "$proxy" ] || fail "the header proxy did not start: $(cat "$work/proxy.err")"
echo "conformance: suite $suite_version on node $node_version against $url (as alice, through $proxy)"

status=0
# suite NAME ARGS... runs the suite once with the baseline and prints its
# summary; the whole output only when the run failed.
suite() {
	local name=$1
	shift
	local rc try
	# A run that fails is run again, and only a third failure counts: the
	# suite's own HTTP client has been seen to drop a stream mid-scenario
	# ("terminated"), or to wait out a scenario, in runs that passed when
	# repeated, with the server before its protocol rebuild as well (the
	# same two scenarios failed and passed again), so it is the suite's, not
	# the server's; two failures in a row of one group were seen once in
	# twelve runs.
	# Every run's log is kept.
	for try in 1 2 3; do
		rc=0
		"$node" "$suite" server --url "$proxy$path" --expected-failures "$conf/expected-failures.yaml" \
			-o "$work/results/$name" "$@" >"$work/$name.log" 2>&1 </dev/null || rc=$?
		if [ "$rc" -eq 0 ]; then
			break
		fi
		if [ "$try" -lt 3 ]; then
			cp "$work/$name.log" "$work/$name.try$try.log"
			echo "conformance: $name failed (rc $rc, try $try); running it again" >&2
		fi
	done
	echo "--- $name"
	# The summary lines, without colours: per scenario, totals, the
	# baseline's verdict.
	sed 's/\x1b\[[0-9;]*m//g' "$work/$name.log" |
		grep -E '^[✓✗] |^Total:|^Passed:|^Not scored|^  [~✓✗] |baseline|Baseline' || true
	if [ "$rc" -ne 0 ]; then
		sed 's/\x1b\[[0-9;]*m//g' "$work/$name.log" | grep -v '^Running\|^Results saved\|^=== Running\|^$' >&2 || true
		echo "conformance: $name: the suite exited $rc" >&2
		status=1
	fi
}

suite 2025-11-25 --requirements 2025-11-25
suite 2026-07-28 --requirements 2026-07-28
# Pending scenarios are left out of the requirement sets; these two test
# the HTTP transport itself.
suite sse-polling --scenario server-sse-polling --spec-version 2025-11-25
suite header-validation --scenario http-header-validation --spec-version 2026-07-28

if ! kill -0 "$server_pid" 2>/dev/null; then
	fail "the server exited during the suite: $(cat "$work/server.err")"
fi
[ "$status" -eq 0 ] || fail "see above"
echo "conformance: PASS (every failure is in conformance/expected-failures.yaml)"
