// An ordinary MCP server written with the official TypeScript SDK
// (@modelcontextprotocol/server 2.x, the v2 split packages), used as an
// upstream behind `TasksLayer`. It knows nothing about tasks: it advertises
// no tasks capability or extension and never answers `resultType: "task"`.
//
//   node fixture.mjs HOST:PORT [--legacy=session|stateless]
//
// Port 0 picks a free port. Once the socket accepts connections it prints
// exactly one line on stdout, `listening on http://HOST:PORT/mcp` (the real
// port); everything else goes to stderr. SIGINT and SIGTERM stop it.
//
// One URL serves both protocol generations:
//
// * 2026-07-28 (per-request `_meta` envelope, no `initialize`): the SDK's
//   `createMcpHandler` in its strict modern posture. It is stateless: a fresh
//   server instance per HTTP request. Answers are `application/json`, or an
//   SSE stream once the tool sends a notification (progress) first.
// * 2025-era (`initialize`, 2025-11-25 and older): with `--legacy=session`
//   (the default) a sessionful Streamable HTTP transport per `Mcp-Session-Id`,
//   so server-to-client requests (elicitation) and `notifications/cancelled`
//   reach the running call; answers are SSE. With `--legacy=stateless` the
//   SDK's own stateless fallback (no session id, one instance per request).
//
// The tools are those of the MCP conformance suite's tasks scenarios, as
// far as an ordinary server can express them; see TOOLS below. It is built
// on the SDK's low-level `Server`, not `McpServer`: `McpServer.registerTool`
// turns every exception a tool throws (a `ProtocolError` too) into an
// `isError: true` result, so `protocol_error_job` could not answer a real
// JSON-RPC error through it.

import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

import { toNodeHandler } from '@modelcontextprotocol/node';
import {
    createMcpHandler,
    createRequestStateCodec,
    fromJsonSchema,
    inputRequired,
    inputResponse,
    isInitializeRequest,
    isLegacyRequest,
    legacyStatelessFallback,
    ProtocolError,
    ProtocolErrorCode,
    Server,
    WebStandardStreamableHTTPServerTransport
} from '@modelcontextprotocol/server';

const SERVER_INFO = { name: 'mcp-tasks-ts-fixture', version: '0.1.0' };

/** Interval between two `notifications/progress` of `slow_compute`. */
const PROGRESS_INTERVAL_MS = 200;
/** How long `failing_job` runs by default before its `isError` result. */
const FAILING_JOB_DEFAULT_S = 1;
/** How long `test_tool_with_task` works once it has the name. */
const TEST_TOOL_WITH_TASK_DELAY_MS = 1500;

/** One line on stderr; stdout carries only the `listening on` line. */
const log = (message) => process.stderr.write(`ts-fixture: ${message}\n`);

// --- Arguments ----------------------------------------------------------------

/** `HOST:PORT` (`[v6]:PORT` for IPv6) → `{ host, port }`; exits 2 if malformed. */
function parseAddress(text) {
    const colon = text.lastIndexOf(':');
    const host = text.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
    const port = Number(text.slice(colon + 1));
    if (colon <= 0 || host === '' || !Number.isInteger(port) || port < 0 || port > 65535) {
        log(`usage: fixture.mjs HOST:PORT [--legacy=session|stateless] (got ${JSON.stringify(text)})`);
        process.exit(2);
    }
    return { host, port };
}

const argv = process.argv.slice(2);
const { host, port } = parseAddress(argv.find((arg) => !arg.startsWith('--')) ?? '');
const legacyMode = (argv.find((arg) => arg.startsWith('--legacy=')) ?? '--legacy=session').slice('--legacy='.length);
if (legacyMode !== 'session' && legacyMode !== 'stateless') {
    log(`--legacy must be session or stateless, got ${JSON.stringify(legacyMode)}`);
    process.exit(2);
}

// --- Helpers for the tools ------------------------------------------------------

const text = (value) => ({ content: [{ type: 'text', text: value }] });

/**
 * Waits `ms` unless the request is aborted first: `signal` is the SDK's
 * `ctx.mcpReq.signal`, which aborts on `notifications/cancelled` (sessions)
 * and when the HTTP exchange of a stateless request goes away. Rejects with
 * the abort reason then.
 */
const pause = (ms, signal) => sleep(ms, undefined, { signal });

/** An elicitation form with one property of `type` named `field`. */
const form = (message, field, type) =>
    inputRequired.elicit({
        message,
        requestedSchema: { type: 'object', properties: { [field]: { type } }, required: [field] }
    });

/**
 * Seals the answers an MRTR tool collected so far into `requestState`
 * (HMAC-SHA256, the SDK's codec; signed, not encrypted). The key lives as
 * long as the process: a state from an earlier run is rejected.
 */
const stateCodec = createRequestStateCodec({ key: randomBytes(32), ttlSeconds: 3600 });

/**
 * The body of every MRTR tool: `asks` maps a key to the elicitation that
 * asks for it. Answers arrive in `ctx.mcpReq.inputResponses` (only the
 * latest round's) and earlier ones in the sealed `requestState`, which is
 * bound to the tool and its arguments. While a key is unanswered the tool
 * returns `input_required` listing just the missing keys; once all are
 * there, `finish(answers)` produces the result.
 */
async function collectInput(toolName, args, ctx, asks, finish) {
    const call = JSON.stringify([toolName, args]);
    const state = ctx.mcpReq.requestState();
    if (state !== undefined && state.call !== call) {
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'requestState belongs to another call');
    }
    const answers = { ...state?.answers };
    for (const key of Object.keys(asks)) {
        const view = inputResponse(ctx.mcpReq.inputResponses, key);
        if (view.kind === 'elicit') answers[key] = { action: view.action, content: view.content };
    }
    const missing = Object.keys(asks).filter((key) => !(key in answers));
    if (missing.length === 0) return finish(answers);
    return inputRequired({
        inputRequests: Object.fromEntries(missing.map((key) => [key, asks[key]])),
        requestState: await stateCodec.mint({ call, answers })
    });
}

// --- The tools -----------------------------------------------------------------

/**
 * name → { description, inputSchema (JSON Schema, advertised and enforced),
 * run(args, ctx) }. `run` returns a tool result or `inputRequired(...)`, or
 * throws a `ProtocolError` for a JSON-RPC error.
 */
const TOOLS = {
    greet: {
        description: 'Answers `Hello, {name}!` at once.',
        inputSchema: {
            type: 'object',
            properties: { name: { type: 'string' } },
            required: ['name']
        },
        run: ({ name }) => text(`Hello, ${name}!`)
    },

    slow_compute: {
        description: 'Sleeps `seconds`; sends notifications/progress every 200 ms when given a progressToken.',
        inputSchema: {
            type: 'object',
            properties: { seconds: { type: 'number', minimum: 0 }, label: { type: 'string' } },
            required: ['seconds']
        },
        run: async ({ seconds, label = 'slow_compute' }, ctx) => {
            const { signal } = ctx.mcpReq;
            const token = ctx.mcpReq._meta?.progressToken;
            const progress = async (done, message) => {
                if (token === undefined) return;
                await ctx.mcpReq.notify({
                    method: 'notifications/progress',
                    params: { progressToken: token, progress: done, total: seconds, message }
                });
            };
            log(`slow_compute started (label ${JSON.stringify(label)}, ${seconds}s, request ${ctx.mcpReq.id})`);
            const start = Date.now();
            const deadline = start + seconds * 1000;
            try {
                await progress(0, `${label}: started`);
                for (;;) {
                    const elapsed = Date.now() - start;
                    const nextTick = start + (Math.floor(elapsed / PROGRESS_INTERVAL_MS) + 1) * PROGRESS_INTERVAL_MS;
                    const wake = Math.min(nextTick, deadline);
                    await pause(Math.max(0, wake - Date.now()), signal);
                    if (wake >= deadline) break;
                    const done = (Date.now() - start) / 1000;
                    await progress(done, `${label}: ${done.toFixed(1)}s of ${seconds}s`);
                }
            } catch (error) {
                if (!signal.aborted) throw error;
                log(`slow_compute cancelled (label ${JSON.stringify(label)}, after ${(Date.now() - start) / 1000}s: ${signal.reason})`);
                throw error; // the SDK sends no answer for an aborted request
            }
            log(`slow_compute finished (label ${JSON.stringify(label)})`);
            return text(`${label} done after ${seconds}s`);
        }
    },

    failing_job: {
        description: 'Runs about one second (or `seconds`), then returns a tool error (isError: true).',
        inputSchema: { type: 'object', properties: { seconds: { type: 'number', minimum: 0 } } },
        run: async ({ seconds = FAILING_JOB_DEFAULT_S }, ctx) => {
            await pause(seconds * 1000, ctx.mcpReq.signal);
            return { ...text('failing_job failed on purpose'), isError: true };
        }
    },

    protocol_error_job: {
        description: 'Answers a JSON-RPC error (-32603), after `seconds` (default 0).',
        inputSchema: { type: 'object', properties: { seconds: { type: 'number', minimum: 0 } } },
        run: async ({ seconds = 0 }, ctx) => {
            if (seconds > 0) await pause(seconds * 1000, ctx.mcpReq.signal);
            throw new ProtocolError(ProtocolErrorCode.InternalError, 'protocol_error_job failed on purpose', {
                tool: 'protocol_error_job'
            });
        }
    },

    confirm_delete: {
        description: 'MRTR: asks `confirm` (elicitation/create), then reports the answer.',
        inputSchema: {
            type: 'object',
            properties: { filename: { type: 'string' } },
            required: ['filename']
        },
        run: (args, ctx) =>
            collectInput('confirm_delete', args, ctx, { confirm: form(`Delete ${args.filename}?`, 'confirm', 'boolean') }, ({ confirm }) => {
                const accepted = confirm.action === 'accept' && confirm.content?.confirm !== false;
                return text(`${accepted ? 'Deleted' : 'Kept'} ${args.filename} (answer: ${JSON.stringify(confirm)})`);
            })
    },

    multi_input: {
        description: 'MRTR: asks `first` and `second` at once; completes when both are answered.',
        inputSchema: { type: 'object', properties: {} },
        run: (args, ctx) =>
            collectInput(
                'multi_input',
                args,
                ctx,
                { first: form('First value?', 'value', 'string'), second: form('Second value?', 'value', 'string') },
                ({ first, second }) => text(`multi_input done: first=${JSON.stringify(first)}, second=${JSON.stringify(second)}`)
            )
    },

    test_tool_with_task: {
        description: 'MRTR: asks `name`, then works 1.5 s and greets the name.',
        inputSchema: { type: 'object', properties: {} },
        run: (args, ctx) =>
            collectInput('test_tool_with_task', args, ctx, { name: form('What is your name?', 'name', 'string') }, async ({ name }) => {
                const given = typeof name.content?.name === 'string' ? name.content.name : JSON.stringify(name);
                await pause(TEST_TOOL_WITH_TASK_DELAY_MS, ctx.mcpReq.signal);
                return text(`Hello, ${given}! test_tool_with_task finished`);
            })
    }
};

/** Each tool's argument validator, built once from its JSON Schema (the SDK bundles ajv). */
const VALIDATORS = Object.fromEntries(Object.entries(TOOLS).map(([name, tool]) => [name, fromJsonSchema(tool.inputSchema)]));

// --- The MCP server --------------------------------------------------------------

/** A fresh server instance: one per modern request, one per legacy session. */
function buildServer() {
    const server = new Server(SERVER_INFO, {
        capabilities: { tools: {} },
        instructions: 'Fixture MCP server (TypeScript SDK) for mcp-tasks tests; it knows nothing about tasks.',
        // Runs before a handler sees a `requestState`; a forged or expired one
        // is answered -32602 and never reaches the tool.
        requestState: { verify: stateCodec.verify }
    });
    server.setRequestHandler('tools/list', () => ({
        tools: Object.entries(TOOLS).map(([name, { description, inputSchema }]) => ({ name, description, inputSchema }))
    }));
    server.setRequestHandler('tools/call', async (request, ctx) => {
        const { name, arguments: args = {} } = request.params;
        const tool = TOOLS[name];
        if (tool === undefined) {
            throw new ProtocolError(ProtocolErrorCode.InvalidParams, `unknown tool \`${name}\``);
        }
        const checked = await VALIDATORS[name]['~standard'].validate(args);
        if (checked.issues !== undefined) {
            const problems = checked.issues.map((issue) => issue.message).join('; ');
            throw new ProtocolError(ProtocolErrorCode.InvalidParams, `invalid arguments for \`${name}\`: ${problems}`);
        }
        return tool.run(checked.value, ctx);
    });
    server.onerror = (error) => log(`server error: ${error.message}`);
    return server;
}

const reportError = (error) => log(`sdk: ${error.message}`);

// The 2026-07-28 leg: stateless, one instance per request; 2025-era
// requests never reach it (they are routed below), hence `legacy: 'reject'`.
const modern = createMcpHandler(buildServer, { legacy: 'reject', onerror: reportError });

/** JSON-RPC error answer without an id, as the SDK's transports write them. */
const errorResponse = (status, code, message) =>
    Response.json({ jsonrpc: '2.0', error: { code, message }, id: null }, { status });

/** Open 2025-era sessions: `Mcp-Session-Id` → transport. */
const sessions = new Map();

/**
 * The 2025-era leg with sessions: `initialize` opens a session with its own
 * server instance; later requests (POST, the GET stream, DELETE) go to the
 * session named by `Mcp-Session-Id`.
 */
async function serveLegacySession(request) {
    const sessionId = request.headers.get('mcp-session-id');
    if (sessionId !== null) {
        const transport = sessions.get(sessionId);
        return transport === undefined
            ? errorResponse(404, -32001, 'Session not found')
            : transport.handleRequest(request);
    }
    let body;
    if (request.method === 'POST') {
        try {
            body = await request.clone().json();
        } catch {
            return errorResponse(400, -32700, 'Parse error: Invalid JSON');
        }
    }
    if (!isInitializeRequest(body)) {
        return errorResponse(400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    }
    const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
            sessions.set(id, transport);
            log(`session ${id} opened`);
        },
        onsessionclosed: (id) => log(`session ${id} closed`)
    });
    transport.onclose = () => {
        if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    await buildServer().connect(transport);
    return transport.handleRequest(request, { parsedBody: body });
}

const serveLegacy = legacyMode === 'session' ? serveLegacySession : legacyStatelessFallback(buildServer, reportError);

/**
 * Routes each request by era with the SDK's own classifier: everything that
 * carries the 2026-07-28 envelope claim (or malformed modern traffic, whose
 * error answers the modern leg owns) goes to `modern`.
 */
const router = {
    fetch: async (request, options) =>
        (await isLegacyRequest(request)) ? serveLegacy(request) : modern.fetch(request, options)
};

// `toNodeHandler` turns a closed client connection into an aborted
// `Request.signal`; the modern leg then closes the request's server
// instance, which aborts `ctx.mcpReq.signal` of the running tool.
const nodeHandler = toNodeHandler(router, { onerror: reportError });

const httpServer = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://fixture').pathname;
    if (path !== '/mcp') {
        res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found; the MCP endpoint is /mcp\n');
        return;
    }
    void nodeHandler(req, res);
});

httpServer.on('error', (error) => {
    log(`cannot serve on ${host}:${port}: ${error.message}`);
    process.exit(1);
});

httpServer.listen(port, host, () => {
    const { port: actual } = httpServer.address();
    const shown = host.includes(':') ? `[${host}]` : host;
    process.stdout.write(`listening on http://${shown}:${actual}/mcp\n`);
    log(`serving 2026-07-28 statelessly and 2025-era requests with legacy mode "${legacyMode}"`);
});

/** Stops on SIGINT/SIGTERM: in-flight exchanges and sessions are closed, then exit. */
async function shutDown(signal) {
    log(`${signal}: shutting down`);
    httpServer.close();
    httpServer.closeAllConnections();
    await Promise.allSettled([modern.close(), ...[...sessions.values()].map((transport) => transport.close())]);
    process.exit(0);
}
process.once('SIGINT', () => void shutDown('SIGINT'));
process.once('SIGTERM', () => void shutDown('SIGTERM'));
