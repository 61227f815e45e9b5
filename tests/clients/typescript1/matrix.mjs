// The interop matrix's driver for the official TypeScript SDK 1.x client
// (@modelcontextprotocol/sdk 1.32.2): protocol 2025-11-25, a session, and its
// experimental tasks (`client.experimental.tasks`), as its users call them.
//
//   scripts/client-typescript1.sh tests/clients/typescript1/matrix.mjs URL SPEC
//
// The steps, SPEC and the lines printed are those of tests/clients/matrix.py
// (which says what SPEC holds). The slow call goes through `callToolStream`
// with a task requested (`taskCreated`, then `taskStatus` at the task's
// `pollInterval`, then `result`); the cancelled one is started the same way
// and cancelled with `cancelTask`; the question comes on the plain call's
// stream (`elicitation/create`) and is answered by the client's handler.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { setTimeout as sleep } from 'node:timers/promises';

/** The steps of a cell, in the order they run and print. */
const STEPS = ['list', 'fast', 'slow', 'cancel', 'ask'];
/** How long one step may take. */
const STEP_TIMEOUT_MS = 60_000;
/** The time to live requested for a task. */
const TASK = { ttl: 60_000 };

class Failed extends Error {}

const oneLine = (text, limit = 160) => {
    const flat = String(text).split(/\s+/).filter(Boolean).join(' ');
    return flat.length <= limit ? flat : `${flat.slice(0, limit - 1)}…`;
};
const quoted = (text, limit = 60) => JSON.stringify(oneLine(text, limit));

/** `text`, or `Failed` when it lacks the step's `expect`. */
function expect(text, step) {
    if (step.expect && !text.includes(step.expect)) throw new Failed(`result lacks ${JSON.stringify(step.expect)}: ${quoted(text, 160)}`);
    return text;
}

/** A tool result's text; `Failed` for a tool error. */
function text(result) {
    const words = (result.content ?? []).map((block) => block.text ?? '').join(' ');
    if (result.isError) throw new Failed(`tool error: ${oneLine(words)}`);
    return words;
}

async function connect(url, spec) {
    const client = new Client({ name: 'mcp-tasks-matrix', version: '0.1.0' }, { capabilities: { elicitation: { form: {} } } });
    client.asked = [];
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
        client.asked.push(request.params.message);
        return { action: 'accept', content: spec.ask?.answer ?? {} };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    return client;
}

/** Calls the step's tool as a task through `callToolStream`; each message of
 * the stream goes to `seen` until it returns true. */
async function streamTask(client, step, seen) {
    const stream = client.experimental.tasks.callToolStream({ name: step.tool, arguments: step.arguments }, CallToolResultSchema, {
        task: TASK,
        timeout: STEP_TIMEOUT_MS
    });
    for await (const message of stream) {
        if (message.type === 'error') throw message.error;
        if (seen(message)) return;
    }
}

/** Returns once the task has shown a status message (the tool reported
 * progress: it runs) or ended; after 1 s for a tool that reports none.
 * Cancelled sooner, a call may not have reached the server at all. */
async function running(client, taskId, step) {
    if (!step.progress) return sleep(1000);
    for (;;) {
        const got = await client.experimental.tasks.getTask(taskId);
        if (got.statusMessage || got.status !== 'working') return;
        await sleep(100);
    }
}

const steps = {
    async list(client) {
        const { tools } = await client.listTools();
        if (tools.length === 0) throw new Failed('no tools');
        const names = tools.map((tool) => tool.name).sort();
        return `${names.length} tools (${names.slice(0, 4).join(', ')}${names.length > 4 ? ', …' : ''})`;
    },

    async fast(client, step) {
        const result = await client.callTool({ name: step.tool, arguments: step.arguments });
        return quoted(expect(text(result), step));
    },

    async slow(client, step) {
        let taskId;
        let said;
        const messages = [];
        await streamTask(client, step, (message) => {
            if (message.type === 'taskCreated') taskId = message.task.taskId;
            const status = message.task?.statusMessage;
            if (status && messages.at(-1) !== status) messages.push(status);
            if (message.type === 'result') said = text(message.result);
            return false;
        });
        if (taskId === undefined) throw new Failed('no task: the call answered at once');
        expect(said ?? '', step);
        if (step.progress && messages.length === 0) throw new Failed(`task ${taskId.slice(0, 8)}… completed, but its status never showed progress`);
        const shown = messages.length > 0 ? ` (${JSON.stringify(messages[0])} … ${JSON.stringify(messages.at(-1))})` : '';
        return `task ${taskId.slice(0, 8)}…, ${messages.length} status messages${shown}, ${quoted(said)}`;
    },

    async cancel(client, step) {
        let taskId;
        await streamTask(client, step, (message) => {
            taskId = message.task?.taskId;
            return message.type === 'taskCreated';
        });
        if (taskId === undefined) throw new Failed('no task: the call answered at once');
        await running(client, taskId, step);
        const answered = await client.experimental.tasks.cancelTask(taskId);
        const got = await client.experimental.tasks.getTask(taskId);
        if (got.status !== 'cancelled') throw new Failed(`after tasks/cancel (${answered.status}) the task is ${got.status}`);
        return `task ${taskId.slice(0, 8)}… cancelled`;
    },

    async ask(client, step) {
        const said = text(await client.callTool({ name: step.tool, arguments: step.arguments }));
        if (client.asked.length === 0) throw new Failed(`the client was asked nothing; result ${quoted(said, 160)}`);
        expect(said, step);
        return `asked ${quoted(client.asked[0], 40)}, ${quoted(said)}`;
    }
};

const describe = (error) => (error instanceof Failed ? oneLine(error.message) : oneLine(`${error?.name ?? 'Error'}: ${error?.message ?? error}`));

const withTimeout = (promise) =>
    Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Failed('timed out')), STEP_TIMEOUT_MS).unref())]);

async function main() {
    const [url, specText] = process.argv.slice(2);
    if (specText === undefined) {
        console.error('usage: matrix.mjs URL SPEC');
        process.exit(2);
    }
    const spec = JSON.parse(specText);
    const say = (name, line) => console.log(`${name}: ${line}`);
    let client;
    try {
        client = await connect(url, spec);
    } catch (error) {
        console.error(error);
        for (const name of STEPS) say(name, `FAIL session: ${describe(error)}`);
        return;
    }
    for (const name of STEPS) {
        if (name !== 'list' && !(name in spec)) {
            say(name, 'n/a');
            continue;
        }
        try {
            say(name, `ok ${await withTimeout(steps[name](client, spec[name] ?? {}))}`);
        } catch (error) {
            console.error(error);
            say(name, `FAIL ${describe(error)}`);
        }
    }
    await client.close();
}

await main();
