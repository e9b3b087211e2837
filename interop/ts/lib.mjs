// What the interop scripts share: their checks, and a throw-away project
// with a private tmux server whose session holds the agents alice and bob.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";

const uuid = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
// sentRE matches send's answer: the id, and the note a send adds for a
// recipient that set no status and has nothing to wake it.
export const sentRE = new RegExp(`^Message #(${uuid}) sent(?: \\([a-z]+ has set no status and nothing wakes it; it is kept until [a-z]+ reads it\\))?$`);

// Failure is a check that failed, reported by its message alone.
export class Failure extends Error {}

export function check(ok, message) {
	if (!ok) throw new Failure(message);
}

export function tmux(sock, ...args) {
	return execFileSync("tmux", ["-S", sock, ...args], { encoding: "utf8" }).trim();
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// same compares two JSON values by their JSON text with sorted keys.
export function same(a, b) {
	const norm = (v) => JSON.stringify(v, (_, x) =>
		x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort()) : x);
	return norm(a) === norm(b);
}

// onlyText returns the text of a result that must hold one text block.
export function onlyText(what, res) {
	check(res.content?.length === 1 && res.content[0].type === "text",
		`${what}: content ${JSON.stringify(res.content)}, want one text block`);
	return res.content[0].text;
}

// agentmailBin returns the absolute path of the binary AGENTMAIL_BIN names.
export function agentmailBin() {
	const bin = process.env.AGENTMAIL_BIN;
	check(bin, "AGENTMAIL_BIN must name the agentmail binary");
	const path = resolve(bin);
	check(existsSync(path), `no agentmail binary at ${path}`);
	return path;
}

// project makes a project root (it has .git) and a private tmux server
// whose session proj has the windows alice and bob, and returns them with
// their panes. paneEnv(pane) is all the environment a server started for
// that pane gets, so that nothing of the caller's own tmux leaks in;
// close() kills the tmux server and removes everything.
export function project() {
	// A socket path must fit in about 108 bytes: a short directory in /tmp.
	const work = mkdtempSync("/tmp/amts");
	const sock = join(work, "s");
	const root = join(work, "root");
	mkdirSync(join(root, ".git"), { recursive: true });
	const close = () => {
		try { tmux(sock, "kill-server"); } catch { /* already gone */ }
		rmSync(work, { recursive: true, force: true });
	};
	try {
		const alice = tmux(sock, "-f", "/dev/null", "new-session", "-d", "-s", "proj", "-x", "200", "-y", "50",
			"-n", "alice", "-P", "-F", "#{pane_id}", "cat");
		const bob = tmux(sock, "new-window", "-d", "-t", "proj:", "-n", "bob", "-P", "-F", "#{pane_id}", "cat");
		const paneEnv = (pane) => ({ PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", TMUX: `${sock},0,0`, TMUX_PANE: pane });
		return { work, sock, root, alice, bob, paneEnv, close };
	} catch (e) {
		close();
		throw e;
	}
}

// run runs main, prints "<name>: ok", or on failure the failure and what
// logs() returns (the servers' stderr), and exits 1.
export async function run(name, main, logs) {
	try {
		await main();
		console.log(`${name}: ok`);
	} catch (e) {
		console.error(`${name}: FAIL: ${e instanceof Failure ? e.message : e.stack ?? e}`);
		const text = logs();
		if (text) console.error(`--- agentmail stderr:\n${text}`);
		process.exit(1);
	}
}
