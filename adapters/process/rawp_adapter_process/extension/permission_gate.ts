/**
 * rawp permission gate: asks the RPC host before each gated tool call.
 *
 * Loaded by the rawp process adapter with `-e <this file>` (xcsh, omp, pi). For every
 * tool named in RAWP_PERMISSION_TOOLS (comma-separated, matched in any case; "*" = every
 * tool) it opens a confirm dialog whose title
 * is "rawp.permission" and whose message is JSON: {"tool_name", "tool_call_id",
 * "tool_input"}. The host answers through `extension_ui_response`; anything but a
 * confirmation (a denial, a cancel, the RAWP_PERMISSION_TIMEOUT_MS deadline, an error)
 * blocks the call.
 *
 * Self-contained on purpose (no imports): each agent loads it with its own runtime.
 */

const TITLE = "rawp.permission";

interface ToolCallEvent {
	toolName: string;
	toolCallId: string;
	input: Record<string, unknown>;
}

interface ExtensionContext {
	ui: {
		confirm(title: string, message: string, options?: { timeout?: number }): Promise<boolean>;
	};
}

interface ExtensionApi {
	on(
		event: "tool_call",
		handler: (
			event: ToolCallEvent,
			ctx: ExtensionContext,
		) => Promise<{ block: true; reason: string } | undefined>,
	): void;
}

function gatedTools(): (name: string) => boolean {
	const names = (process.env.RAWP_PERMISSION_TOOLS ?? "")
		.split(",")
		.map((name) => name.trim().toLowerCase())
		.filter((name) => name.length > 0);
	if (names.includes("*")) return () => true;
	const gated = new Set(names);
	return (name) => gated.has(name.toLowerCase());
}

export default function permissionGate(pi: ExtensionApi): void {
	const isGated = gatedTools();
	const timeout = Number(process.env.RAWP_PERMISSION_TIMEOUT_MS ?? "0");
	const options = Number.isFinite(timeout) && timeout > 0 ? { timeout } : undefined;

	pi.on("tool_call", async (event, ctx) => {
		if (!isGated(event.toolName)) return undefined;
		const details = JSON.stringify({
			tool_name: event.toolName,
			tool_call_id: event.toolCallId,
			tool_input: event.input,
		});
		let allowed = false;
		try {
			allowed = (await ctx.ui.confirm(TITLE, details, options)) === true;
		} catch {
			allowed = false;
		}
		if (allowed) return undefined;
		return { block: true, reason: `Permission denied by the host for tool ${event.toolName}` };
	});
}
