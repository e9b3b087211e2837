// Drives "agentmail mcp" with the official MCP TypeScript SDK client over
// stdio through what an agent does when it waits for an answer: bob calls
// receive with timeout_seconds, the session answers other calls meanwhile,
// and the message alice sends with the CLI comes back at once; a short
// wait with nothing to take ends with timed_out; bob replies with
// reply_to and alice receives it with its thread; and bob lists and reads
// the inbox and thread resources, subscribed to his inbox.
//
// The SDK validates every structured result against the tool's output
// schema, so a receive result the schema does not allow fails here too.
//
// Usage: AGENTMAIL_BIN=/path/to/agentmail node wait-reply.mjs
// Needs tmux; it starts a private tmux server and kills it at the end.
// Exits 0 when every check passes, 1 otherwise.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpError, ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { agentmailBin, check, onlyText, project, run, same, sentRE, sleep } from "./lib.mjs";

// A waiting receive must return a message sent meanwhile within the
// one-second budget of every call, doubled for a loaded machine.
const arriveWithin = 2000;
// The request's own timeout is only there so that a server that never
// answers fails this script quickly rather than after 60 seconds.
const requestTimeout = 30000;

// stderr collects what the servers log, to show when a check fails.
let stderr = "";

async function main() {
	const binPath = agentmailBin();
	const { root, alice: alicePane, bob: bobPane, paneEnv, close } = project();
	const clients = [];
	try {
		async function connect(pane, name) {
			const transport = new StdioClientTransport({ command: binPath, args: ["mcp"], cwd: root, env: paneEnv(pane), stderr: "pipe" });
			transport.stderr?.on("data", (chunk) => { stderr += `[${name}] ${chunk}`; });
			const client = new Client({ name: "agentmail-interop-ts", version: "1" });
			clients.push(client);
			await client.connect(transport);
			return client;
		}
		const call = (client, name, args) =>
			client.callTool({ name, arguments: args ?? {} }, undefined, { timeout: requestTimeout });

		const bob = await connect(bobPane, "bob");
		const caps = bob.getServerCapabilities();
		check(caps?.resources?.subscribe === true, `capabilities ${JSON.stringify(caps)}, want resources with subscribe`);

		const { resources } = await bob.listResources(undefined, { timeout: requestTimeout });
		check(resources.length === 2 && resources[0].uri === "agentmail://inbox" && resources[0].mimeType === "text/markdown" &&
			resources[1].uri === "agentmail://sent",
			`resources/list: ${JSON.stringify(resources)}, want the inbox and the sent view`);
		const { resourceTemplates } = await bob.listResourceTemplates(undefined, { timeout: requestTimeout });
		check(resourceTemplates.length === 1 && resourceTemplates[0].uriTemplate === "agentmail://threads/{thread_id}",
			`resources/templates/list: ${JSON.stringify(resourceTemplates)}, want the thread template only`);
		console.log("wait-reply: resources/list and resources/templates/list list the inbox and the thread");

		// Nothing comes: the wait ends with the usual empty result.
		let start = performance.now();
		let res = await call(bob, "receive", { timeout_seconds: 0.3 });
		let took = performance.now() - start;
		check(!res.isError && onlyText("timed-out receive", res) === "No unread messages" &&
			same(res.structuredContent, { status: "No unread messages", timed_out: true }),
			`timed-out receive: ${JSON.stringify(res)}`);
		check(took >= 250 && took < 5000, `a wait of 0.3 s took ${Math.round(took)} ms`);
		console.log(`wait-reply: a 0.3 s wait with no mail timed out after ${Math.round(took)} ms`);

		const updates = [];
		bob.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updates.push(n.params.uri); });
		await bob.subscribeResource({ uri: "agentmail://inbox" }, { timeout: requestTimeout });

		// bob waits; the session answers another call meanwhile.
		let waited;
		let waitedAt;
		const waiting = call(bob, "receive", { timeout_seconds: 20 }).then(
			(r) => { waited = r; waitedAt = performance.now(); },
			(e) => { waited = e; waitedAt = performance.now(); });
		const list = await call(bob, "list-recipients");
		check(onlyText("list-recipients", list) === "alice\nbob [you]", `list-recipients during the wait: ${JSON.stringify(list)}`);
		check(waited === undefined, `receive returned before any mail was sent: ${waited?.stack ?? JSON.stringify(waited)}`);

		const body = "are you there? ✉";
		// The time counts from the start of the send: the receive may well
		// return before the CLI has exited.
		const sent = performance.now();
		const { stdout } = await promisify(execFile)(binPath, ["send", "bob", body], { cwd: root, env: paneEnv(alicePane) });
		const m = sentRE.exec(stdout.trim());
		check(m, `agentmail send as alice: ${stdout}`);
		const id = m[1];
		await Promise.race([waiting, sleep(arriveWithin)]);
		check(waited !== undefined, `the waiting receive did not return within ${arriveWithin} ms of the send's end`);
		check(!(waited instanceof Error), `waiting receive: ${waited?.stack}`);
		check(!waited.isError && onlyText("waiting receive", waited) === `From: alice\nID: ${id}\n\n${body}` &&
			same(waited.structuredContent, { from: "alice", id, message: body }),
			`waiting receive: ${JSON.stringify(waited)}`);
		console.log(`wait-reply: the waiting receive returned alice's message ${Math.round(waitedAt - sent)} ms after the send began`);

		for (let i = 0; i < arriveWithin / 20 && !updates.length; i++) await sleep(20);
		check(updates.length > 0 && updates.every((u) => u === "agentmail://inbox"),
			`resource updates ${JSON.stringify(updates)}, want the inbox within ${arriveWithin} ms`);
		await bob.unsubscribeResource({ uri: "agentmail://inbox" }, { timeout: requestTimeout });
		console.log("wait-reply: the subscribed inbox was reported updated");

		// bob answers in the thread; alice receives the reply with it.
		const reply = "fix/watchdog";
		res = await call(bob, "send", { recipient: "alice", message: reply, reply_to: id });
		const r = sentRE.exec(onlyText("reply", res));
		check(!res.isError && r, `reply: ${JSON.stringify(res)}`);
		const rid = r[1];
		const alice = await connect(alicePane, "alice");
		res = await call(alice, "receive");
		check(!res.isError && onlyText("alice's receive", res) === `From: bob\nID: ${rid}\nReply-To: ${id}\nThread: ${id}\n\n${reply}` &&
			same(res.structuredContent, { from: "bob", id: rid, message: reply, reply_to: id, thread_id: id }),
			`alice's receive: ${JSON.stringify(res)}`);
		console.log("wait-reply: alice received the reply with reply_to and thread_id");

		async function read(uri) {
			const { contents } = await bob.readResource({ uri }, { timeout: requestTimeout });
			check(contents.length === 1 && contents[0].uri === uri && contents[0].mimeType === "text/markdown" && typeof contents[0].text === "string",
				`resources/read ${uri}: ${JSON.stringify(contents)}`);
			return contents[0].text;
		}
		const inbox = await read("agentmail://inbox");
		for (const want of ["# Inbox of bob\n\nNo unread messages.\n", "- read, from alice, ", `id ${id}: ${body}\n`]) {
			check(inbox.includes(want), `inbox lacks ${JSON.stringify(want)}:\n${inbox}`);
		}
		const thread = await read(`agentmail://threads/${id}`);
		for (const want of [`# ${body}\n`, `Thread ${id}, 2 messages.\n`, "**From alice to bob**", `\n\n${body}\n`,
			"**From bob to alice**", `, id ${rid}, in reply to ${id}\n\n${reply}\n`]) {
			check(thread.includes(want), `thread lacks ${JSON.stringify(want)}:\n${thread}`);
		}
		let err;
		try {
			await bob.readResource({ uri: "agentmail://threads/nosuchthread" }, { timeout: requestTimeout });
		} catch (e) {
			err = e;
		}
		check(err instanceof McpError && err.code === -32002 && /Resource not found/.test(err.message),
			`read of an unknown thread: ${err}, want error -32002 Resource not found`);
		console.log("wait-reply: resources/read gives the inbox and the thread, and not-found for an unknown thread");
	} finally {
		for (const c of clients) await c.close().catch(() => {});
		close();
	}
}

await run("wait-reply", main, () => stderr);
