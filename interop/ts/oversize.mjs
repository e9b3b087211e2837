// Drives "agentmail mcp" with the official MCP TypeScript SDK client, the
// one Claude Code and the Inspector are built on, over stdio: a send of a
// message too big for one 65536-byte line must fail with the server's size
// error at once, not after the SDK's 60-second request timeout, and the
// session must go on serving (tools/list afterwards).
//
// The SDK writes "id" after "params", so the server can only answer with
// the call's id if it reads the whole oversized line. An answer with id
// null matches no call, and the SDK keeps waiting.
//
// Usage: AGENTMAIL_BIN=/path/to/agentmail node oversize.mjs
// Needs tmux; it starts a private tmux server and kills it at the end.
// Exits 0 when every check passes, 1 otherwise.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { agentmailBin, check, project, run } from "./lib.mjs";

// The error must come back well before the SDK's own timeout would end
// the call; one second is the budget the requirements give every call.
const answerWithin = 1000;
// The request's own timeout is only there so that a server that never
// answers fails this script quickly rather than after 60 seconds.
const requestTimeout = 10000;

// stderr collects what the server logs, to show when a check fails.
let stderr = "";

async function main() {
	const binPath = agentmailBin();
	const { root, alice, paneEnv, close } = project();
	let client;
	try {
		const transport = new StdioClientTransport({
			command: binPath,
			args: ["mcp"],
			cwd: root,
			env: paneEnv(alice),
			stderr: "pipe",
		});
		transport.stderr?.on("data", (chunk) => { stderr += chunk; });
		client = new Client({ name: "agentmail-interop-ts", version: "1" });
		await client.connect(transport);

		const start = performance.now();
		let err;
		try {
			await client.callTool(
				{ name: "send", arguments: { recipient: "bob", message: "x".repeat(70000) } },
				undefined,
				{ timeout: requestTimeout },
			);
		} catch (e) {
			err = e;
		}
		const took = performance.now() - start;
		check(err, "send of 70000 bytes succeeded, want the size error");
		check(err instanceof McpError, `send of 70000 bytes: ${err}, want an error from the server`);
		check(err.code === -32600 && /65536/.test(err.message) && /split/.test(err.message),
			`send of 70000 bytes: error ${err.code} ${JSON.stringify(err.message)}, want -32600 naming 65536 and saying to split`);
		check(took < answerWithin, `the size error took ${Math.round(took)} ms, want under ${answerWithin} ms`);
		console.log(`oversize: send of 70000 bytes failed in ${Math.round(took)} ms: ${err.message}`);

		const { tools } = await client.listTools(undefined, { timeout: requestTimeout });
		const names = tools.map((t) => t.name).sort().join(",");
		check(names === "list-recipients,receive,send,status", `tools/list after the size error: ${names}`);
		check(!existsSync(join(root, ".agentmail", "mailboxes", "bob.jsonl")), "a refused send stored a message");
		console.log("oversize: tools/list on the same session lists the four tools");
	} finally {
		await client?.close().catch(() => {});
		close();
	}
}

await run("oversize", main, () => stderr);
