#!/usr/bin/env bash
# Drives "agentmail mcp" with the MCP Inspector CLI from npm, in its legacy
# era (initialize at 2025-11-25) and its modern era (server/discover and
# per-request _meta at 2026-07-28): lists the tools and calls each one as
# alice, then receives as bob, checking exit codes, texts and structured
# results, and, from a recording of the wire, that each era was spoken.
# Then, in both eras, it lists the tools of "agentmail mcp --transport
# http" and sends and receives through them (--transport http, with the
# token and the agent's name given by --header).
#
# The binary is $AGENTMAIL_BIN, or one built from the parent directory.
# Needs tmux, node/npx and jq; under CI=true a missing one is a failure,
# elsewhere the script says so and exits 1 too, since nothing was checked.
set -euo pipefail

INSPECTOR="@modelcontextprotocol/inspector@2.12.0"
here=$(cd "$(dirname "$0")" && pwd)

fail() {
	echo "inspector: FAIL: $*" >&2
	exit 1
}

for tool in tmux npx jq; do
	command -v "$tool" >/dev/null 2>&1 || fail "$tool is required but not installed"
done

work=$(mktemp -d /tmp/aminspXXXXXX)
sock="$work/s"
cleanup() {
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

mkdir -p "$work/root/.git"
alice=$(tmux -S "$sock" -f /dev/null new-session -d -s proj -x 200 -y 50 -n alice -P -F '#{pane_id}' cat)
bob=$(tmux -S "$sock" new-window -d -t proj: -n bob -P -F '#{pane_id}' cat)

# The Inspector starts this wrapper as its server: it runs agentmail in the
# project root and records both directions of the conversation in $WIRE.in
# and $WIRE.out (the Inspector passes only the variables given with -e).
cat >"$work/server" <<EOF
#!/bin/sh
cd "$work/root" || exit 1
tee "\$WIRE.in" | "$bin" mcp | tee "\$WIRE.out"
EOF
chmod +x "$work/server"

runs=0
# inspect ERA PANE EXPECTED_EXIT inspector-args... runs one Inspector
# command as the agent in PANE and checks its exit status. Its stdout is
# left in $out, and its wire recording in $wire.in and $wire.out.
inspect() {
	local era=$1 pane=$2 want=$3
	shift 3
	runs=$((runs + 1))
	wire="$work/wire$runs"
	local status=0
	npx -y "$INSPECTOR" --cli "$work/server" \
		-e "TMUX=$sock,0,0" -e "TMUX_PANE=$pane" -e "WIRE=$wire" \
		--protocol-era "$era" "$@" >"$work/out" 2>"$work/err" </dev/null || status=$?
	out=$(cat "$work/out")
	[ "$status" = "$want" ] || failed_run "$era: inspector $* exited $status, want $want"
	check_wire "$era"
}
# failed_run shows the Inspector's output, and the HTTP server's log when
# there is one, and fails with the message.
failed_run() {
	echo "--- stdout:" >&2
	cat "$work/out" >&2
	echo "--- stderr:" >&2
	grep -v '^npm warn' "$work/err" >&2 || true
	if [ -f "$work/server.err" ]; then
		echo "--- server stderr:" >&2
		cat "$work/server.err" >&2
	fi
	fail "$*"
}

# check_wire ERA checks the recorded conversation of the last run: the
# legacy era opens with initialize and gets no modern members; the modern
# era opens with server/discover, never initializes, sends the modern _meta
# with every request and gets resultType "complete" on every result.
check_wire() {
	local first
	first=$(head -n 1 "$wire.in" | jq -r .method)
	case $1 in
	legacy)
		[ "$first" = initialize ] || fail "legacy run began with $first"
		jq -e -s 'all(.[]; (.result // {}) | has("resultType") | not)' "$wire.out" >/dev/null ||
			fail "legacy run got a modern result: $(cat "$wire.out")"
		;;
	modern)
		[ "$first" = server/discover ] || fail "modern run began with $first"
		jq -e -s 'all(.[]; .method != "initialize")' "$wire.in" >/dev/null || fail "modern run sent initialize"
		jq -e -s 'all(.[] | select(has("id")); .params._meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28")' "$wire.in" >/dev/null ||
			fail "modern run sent a request without the modern _meta: $(cat "$wire.in")"
		jq -e -s 'all(.[] | select(has("result")); .result.resultType == "complete")' "$wire.out" >/dev/null ||
			fail "modern run got a result without resultType: $(cat "$wire.out")"
		;;
	esac
	jq -e -s 'all(.[]; has("method") and has("id") | not)' "$wire.out" >/dev/null ||
		fail "the server sent a request to the client"
}

# expect JQ-FILTER WHAT checks the last run's stdout.
expect() {
	jq -e "$1" <<<"$out" >/dev/null || fail "$era: $2: got $out"
}

uuid='[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
for era in legacy modern; do
	# --strict reports tool-schema portability problems on stderr (exit 6
	# for errors); there must be none, not even warnings.
	inspect "$era" "$alice" 0 --method tools/list --strict
	if grep -v '^npm warn' "$work/err" | grep -q .; then
		fail "$era: the Inspector reported on the tool list: $(grep -v '^npm warn' "$work/err")"
	fi
	expect '[.tools[].name] == ["send","receive","status","list-recipients"]' "tool names"
	expect 'all(.tools[]; .inputSchema.type == "object" and .outputSchema.type == "object" and .title != null)' "tool schemas"

	inspect "$era" "$alice" 0 --method tools/call --tool-name list-recipients
	expect '.content == [{"type":"text","text":"alice [you]\nbob"}]' "list-recipients text"
	expect '.structuredContent == {"recipients":[{"name":"alice","is_current":true},{"name":"bob","is_current":false}]}' "list-recipients structured"

	inspect "$era" "$alice" 0 --method tools/call --tool-name status --tool-arg status=ready
	expect '.content[0].text == "Status set to ready" and .structuredContent == {"status":"ok"}' "status"

	body="hello from the Inspector, $era era: 123 ✉"
	inspect "$era" "$alice" 0 --method tools/call --tool-name send --tool-arg recipient=bob --tool-arg "message=\"$body\""
	# bob never set a status and nothing wakes him: send says so.
	note="bob has set no status and nothing wakes it; it is kept until bob reads it"
	expect ".content[0].text | test(\"^Message #$uuid sent \\\\($note\\\\)$\")" "send text"
	id=$(jq -r .structuredContent.message_id <<<"$out")
	expect ".content[0].text == \"Message #$id sent ($note)\"" "send id"

	inspect "$era" "$bob" 0 --method tools/call --tool-name receive
	expect ".content[0].text == \"From: alice\\nID: $id\\n\\n$body\"" "receive text"
	expect ".structuredContent == {\"from\":\"alice\",\"id\":\"$id\",\"message\":\"$body\"}" "receive structured"

	inspect "$era" "$bob" 0 --method tools/call --tool-name receive
	expect '.content[0].text == "No unread messages" and .structuredContent == {"status":"No unread messages"}' "empty receive"

	# A failing call is a result with isError, which the Inspector exits 5 on.
	inspect "$era" "$alice" 5 --method tools/call --tool-name send --tool-arg recipient=nobody --tool-arg 'message="x"'
	expect '.isError == true and .content == [{"type":"text","text":"recipient not found"}]' "send to nobody"
	echo "inspector: $era era: tools/list and every tool passed"
done

# The same over Streamable HTTP: one "agentmail mcp --transport http" in a
# window of the session, with the token it makes itself, and the
# Inspector sending the token and the agent's name with --header.
server_pid=$(tmux -S "$sock" new-window -d -t proj: -n server -P -F '#{pane_pid}' \
	"cd '$work/root' && exec '$bin' mcp --transport http --port 0 2>'$work/server.err'")
url=""
for _ in $(seq 100); do
	url=$(sed -n 's/^agentmail mcp: serving Streamable HTTP at \(http:[^ ]*\)$/\1/p' "$work/server.err")
	[ -n "$url" ] && break
	sleep 0.1
done
[ -n "$url" ] || fail "the HTTP server printed no URL: $(cat "$work/server.err")"
token=$(cat "$work/root/.agentmail/http-token")

# inspect_http ERA WHO EXPECTED_EXIT inspector-args... is inspect over
# HTTP, as the agent the header WHO names.
inspect_http() {
	local era=$1 who=$2 want=$3
	shift 3
	runs=$((runs + 1))
	local status=0
	npx -y "$INSPECTOR" --cli --transport http --server-url "$url" \
		--header "Authorization: Bearer $token" --header "$who" \
		--protocol-era "$era" "$@" >"$work/out" 2>"$work/err" </dev/null || status=$?
	out=$(cat "$work/out")
	[ "$status" = "$want" ] || failed_run "$era over HTTP: inspector $* exited $status, want $want"
}

for era in legacy modern; do
	inspect_http "$era" "Agentmail-Pane: $alice" 0 --method tools/list
	expect '[.tools[].name] == ["send","receive","status","list-recipients"]' "tool names over HTTP"
	inspect_http "$era" "Agentmail-Pane: $alice" 0 --method tools/call --tool-name list-recipients
	expect '.structuredContent.recipients[0] == {"name":"alice","is_current":true}' "list-recipients over HTTP"
	body="hello over HTTP from the Inspector, $era era ✉"
	inspect_http "$era" "Agentmail-Pane: $alice" 0 --method tools/call --tool-name send --tool-arg recipient=bob --tool-arg "message=\"$body\""
	id=$(jq -r .structuredContent.message_id <<<"$out")
	expect ".content[0].text == \"Message #$id sent (bob has set no status and nothing wakes it; it is kept until bob reads it)\"" "send over HTTP"
	inspect_http "$era" "Agentmail-Agent: bob" 0 --method tools/call --tool-name receive
	expect ".structuredContent == {\"from\":\"alice\",\"id\":\"$id\",\"message\":\"$body\"}" "receive over HTTP"
	echo "inspector: $era era over HTTP: tools/list, list-recipients, send and receive passed"
done
kill "$server_pid"
echo "inspector: PASS ($runs Inspector runs with $INSPECTOR)"
