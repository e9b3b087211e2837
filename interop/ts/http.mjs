// Drives "agentmail mcp --transport http" and "--transport sse" with the
// official MCP TypeScript SDK client: StreamableHTTPClientTransport and
// SSEClientTransport, each given the server's bearer token and the
// agent's name as headers in requestInit. alice (named by her pane)
// lists the tools and calls all four; bob (named by his window)
// receives what she sent. A request that names no agent is refused. A
// named agent, carol, connects with her own token alone and calls every
// tool as herself; her token with a header naming bob is refused.
//
// The SDK validates every structured result against the tool's output
// schema, so a result the schema does not allow fails here too.
//
// Usage: AGENTMAIL_BIN=/path/to/agentmail node http.mjs
// Needs tmux; it starts a private tmux server, with the two servers in
// windows of its session, and kills them all at the end. Exits 0 when
// every check passes, 1 otherwise.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { agentmailBin, check, onlyText, project, run, same, sentRE, sleep, tmux } from "./lib.mjs";

// The request's own timeout is only there so that a server that never
// answers fails this script quickly rather than after 60 seconds.
const requestTimeout = 30000;

// servers are the HTTP servers started, for their pids; logs collects
// their stderr, to show when a check fails.
const servers = [];
let logs = "";

async function main() {
	const binPath = agentmailBin();
	const { work, sock, root, alice: alicePane, close } = project();
	const clients = [];
	try {
		// start runs a server in a window of the session, as a user would,
		// with the token it makes itself; exec makes the pane's process the
		// server, so that its pid is known.
		async function start(transport) {
			const err = join(work, `${transport}.err`);
			const pid = Number(tmux(sock, "new-window", "-d", "-t", "proj:", "-n", `server-${transport}`, "-P", "-F", "#{pane_pid}",
				`cd '${root}' && exec '${binPath}' mcp --transport ${transport} --port 0 2>'${err}'`));
			const srv = { transport, pid, err, url: "" };
			servers.push(srv);
			for (let i = 0; i < 500 && !srv.url; i++) {
				const m = /serving .* at (http:\/\/127\.0\.0\.1:\d+\/\w+)\n/.exec(existsSync(err) ? readFileSync(err, "utf8") : "");
				if (m) srv.url = m[1];
				else await sleep(20);
			}
			check(srv.url, `the ${transport} server printed no URL`);
			srv.token = readFileSync(join(root, ".agentmail", "http-token"), "utf8").trim();
			return srv;
		}
		// Both start first: each has a window, which list-recipients lists.
		const http = await start("http");
		const sse = await start("sse");

		async function connect(srv, headers) {
			const requestInit = { headers: { Authorization: `Bearer ${srv.token}`, ...headers } };
			const url = new URL(srv.url);
			const transport = srv.transport === "http"
				? new StreamableHTTPClientTransport(url, { requestInit })
				: new SSEClientTransport(url, { requestInit });
			const client = new Client({ name: "agentmail-interop-ts", version: "1" });
			clients.push(client);
			await client.connect(transport);
			return client;
		}
		const call = (client, name, args) =>
			client.callTool({ name, arguments: args ?? {} }, undefined, { timeout: requestTimeout });

		for (const srv of [http, sse]) {
			const what = `${srv.transport} (${srv.transport === "http" ? "StreamableHTTPClientTransport" : "SSEClientTransport"})`;
			const alice = await connect(srv, { "Agentmail-Pane": alicePane });
			check(alice.getServerVersion()?.name === "agentmail", `serverInfo ${JSON.stringify(alice.getServerVersion())}`);
			const { tools } = await alice.listTools(undefined, { timeout: requestTimeout });
			check(same(tools.map((t) => t.name), ["send", "receive", "status", "list-recipients"]),
				`${what}: tools ${JSON.stringify(tools.map((t) => t.name))}`);

			// A server's own window is no recipient of its own agents.
			const other = srv.transport === "http" ? "server-sse" : "server-http";
			let res = await call(alice, "list-recipients");
			check(!res.isError && onlyText("list-recipients", res) === `alice [you]\nbob\n${other}` &&
				same(res.structuredContent, { recipients: [{ name: "alice", is_current: true }, { name: "bob", is_current: false },
					{ name: other, is_current: false }] }),
				`${what}: list-recipients: ${JSON.stringify(res)}`);
			res = await call(alice, "status", { status: "ready" });
			check(!res.isError && onlyText("status", res) === "Status set to ready" && same(res.structuredContent, { status: "ok" }),
				`${what}: status: ${JSON.stringify(res)}`);
			res = await call(alice, "send", { recipient: "nobody", message: "x" });
			check(res.isError === true && onlyText("send to nobody", res) === "recipient not found",
				`${what}: send to nobody: ${JSON.stringify(res)}`);
			const body = `hello over ${srv.transport} from the TypeScript SDK ✉`;
			res = await call(alice, "send", { recipient: "bob", message: body });
			const m = sentRE.exec(onlyText("send", res));
			check(!res.isError && m && same(res.structuredContent, { message_id: m[1] }), `${what}: send: ${JSON.stringify(res)}`);
			const id = m[1];

			const bob = await connect(srv, { "Agentmail-Agent": "bob" });
			res = await call(bob, "receive");
			check(!res.isError && onlyText("receive", res) === `From: alice\nID: ${id}\n\n${body}` &&
				same(res.structuredContent, { from: "alice", id, message: body }),
				`${what}: bob's receive: ${JSON.stringify(res)}`);
			res = await call(bob, "receive");
			check(!res.isError && onlyText("empty receive", res) === "No unread messages", `${what}: bob's second receive: ${JSON.stringify(res)}`);

			// With the token but no agent, the connection is refused at
			// once, with the reason, and nothing is served as somebody.
			let err;
			try {
				await connect(srv, {});
			} catch (e) {
				err = e;
			}
			// The SSE client reports the status of the stream's GET alone.
			const refused = srv.transport === "http" ? /no agent named/ : /\(400\)/;
			check(err && refused.test(err.message), `${what}: connecting naming no agent: ${err ?? "it connected"}`);
			console.log(`http: ${what}: tools/list and all four tools as alice and bob, and no agent refused`);
		}

		// A named agent connects with its own token alone and acts as
		// itself; with a header naming bob it is refused at connect.
		const env = { ...process.env };
		delete env.TMUX;
		delete env.TMUX_PANE;
		const token = execFileSync(binPath, ["agent", "add", "carol"], { cwd: root, env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
		check(/^amt_[A-Z2-7]{52}$/.test(token), `agent add carol printed ${JSON.stringify(token)}`);
		const carol = await connect(http, { Authorization: `Bearer ${token}` });
		let res = await call(carol, "list-recipients");
		check(!res.isError && onlyText("carol's list-recipients", res) === "carol [you]\nalice\nbob\nserver-sse",
			`carol's list-recipients: ${JSON.stringify(res)}`);
		res = await call(carol, "status", { status: "ready" });
		check(!res.isError && onlyText("carol's status", res) === "Status set to ready", `carol's status: ${JSON.stringify(res)}`);
		res = await call(carol, "send", { recipient: "bob", message: "from carol" });
		check(!res.isError && sentRE.test(onlyText("carol's send", res)), `carol's send: ${JSON.stringify(res)}`);
		const bob = await connect(http, { "Agentmail-Agent": "bob" });
		res = await call(bob, "receive");
		check(!res.isError && res.structuredContent?.from === "carol" && res.structuredContent?.message === "from carol",
			`bob's receive from carol: ${JSON.stringify(res)}`);
		res = await call(bob, "send", { recipient: "carol", message: "to carol" });
		check(!res.isError, `bob's send to carol: ${JSON.stringify(res)}`);
		res = await call(carol, "receive");
		check(!res.isError && res.structuredContent?.from === "bob" && res.structuredContent?.message === "to carol",
			`carol's receive: ${JSON.stringify(res)}`);
		let borrowed;
		try {
			await connect(http, { Authorization: `Bearer ${token}`, "Agentmail-Agent": "bob" });
		} catch (e) {
			borrowed = e;
		}
		check(borrowed && /403|nobody else/.test(borrowed.message), `carol's token as bob: ${borrowed ?? "it connected"}`);
		console.log("http: a named agent's token: all four tools as carol, and her token as bob refused");
	} finally {
		for (const c of clients) await c.close().catch(() => {});
		for (const s of servers) {
			try { process.kill(s.pid, "SIGTERM"); } catch { /* already gone */ }
			if (existsSync(s.err)) logs += `[${s.transport}] ${readFileSync(s.err, "utf8")}`;
		}
		close();
	}
}

await run("http", main, () => logs);
