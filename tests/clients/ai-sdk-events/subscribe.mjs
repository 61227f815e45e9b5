// A webhook subscriber of task events written with the Vercel AI SDK's MCP
// client (@ai-sdk/mcp 2.0.99, its experimental MCP Events API), run against
// mcp-tasks-gateway by gateway/tests/gateway_events_ai_sdk.rs through
// scripts/client-ai-sdk-events.sh.
//
// Usage:
//   node subscribe.mjs --url GATEWAY_URL --cert CERT --key KEY [--token TOKEN]
//                      [--event NAME] [--host HOST]
// The bearer token comes from --token or MCP_TASKS_TOKEN.
//
// What it does, in order, with one line on stdout per step:
// - serves HTTPS on HOST (default 127.0.0.1), a free port, with CERT and KEY,
//   and passes every request to the SDK's webhook handler
//   (experimental_createMCPEventWebhook), which checks the Standard Webhooks
//   signature, answers the verification challenge and parses each event;
//   prints `listening on https://localhost:PORT/hook`;
// - connects with `Authorization: Bearer TOKEN` (server/discover, protocol
//   2026-07-28) and lists the events (events/list): the event NAME (default
//   `mcp-tasks/status`) must be there and offer `webhook` delivery; prints
//   `{"listed": descriptor}`;
// - subscribes to it (events/subscribe, arguments {}, webhook delivery to
//   the server above, a secret the SDK makes) with an in-memory store;
//   prints `{"subscribed": result}` then `ready`;
// - prints `{"delivery": {"id": webhook-id, "kind": "event"|"verification"|
//   "gap"|"terminated", "status": answered status}}` for each POST, and
//   `{"event": event, "subscription": id}` for each event the handler
//   accepted (onEvent), `{"gap": ...}` and `{"terminated": ...}` for
//   control messages, `{"webhookError": message}` when the handler fails;
// - on SIGTERM or SIGINT unsubscribes (events/unsubscribe), prints
//   `unsubscribed`, closes the client and the server, and exits 0.
// Any failure prints `{"error": message}` on stderr and exits 1.

import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { parseArgs } from 'node:util';

import {
  createMCPClient,
  experimental_createMCPEventWebhook as createWebhook,
} from '@ai-sdk/mcp';

const { values: options } = parseArgs({
  options: {
    url: { type: 'string' },
    token: { type: 'string' },
    cert: { type: 'string' },
    key: { type: 'string' },
    event: { type: 'string', default: 'mcp-tasks/status' },
    host: { type: 'string', default: '127.0.0.1' },
  },
});
const token = options.token ?? process.env.MCP_TASKS_TOKEN;
if (!options.url || !options.cert || !options.key || !token) {
  fail('needs --url, --cert, --key and a token (--token or MCP_TASKS_TOKEN)');
}

function say(value) {
  process.stdout.write(`${typeof value === 'string' ? value : JSON.stringify(value)}\n`);
}

function fail(message) {
  process.stderr.write(`${JSON.stringify({ error: String(message) })}\n`);
  process.exit(1);
}

// The subscriptions, by routing key; the SDK keeps the secret here.
class MemoryStore {
  #records = new Map();

  async get(key) {
    return this.#copy(this.#records.get(key));
  }

  async getById(id) {
    for (const record of this.#records.values()) {
      if (record.id === id) return this.#copy(record);
    }
    return undefined;
  }

  async set(subscription) {
    this.#records.set(subscription.key, structuredClone(subscription));
  }

  async update(key, patch) {
    const record = this.#records.get(key);
    if (record) Object.assign(record, structuredClone(patch));
  }

  async delete(key) {
    this.#records.delete(key);
  }

  #copy(record) {
    return record === undefined ? undefined : structuredClone(record);
  }
}

const store = new MemoryStore();
const webhook = createWebhook({
  store,
  onEvent: async ({ subscription, event }) => say({ event, subscription: subscription.id }),
  onGap: async ({ gap }) => say({ gap }),
  onTerminated: async ({ termination }) => say({ terminated: termination }),
  onError: error => say({ webhookError: String(error?.message ?? error) }),
});

// node:http's request to a WHATWG Request, and the Response back.
function toRequest(incoming, body, origin) {
  const headers = new Headers();
  for (let at = 0; at < incoming.rawHeaders.length; at += 2) {
    headers.append(incoming.rawHeaders[at], incoming.rawHeaders[at + 1]);
  }
  const method = incoming.method;
  return new Request(new URL(incoming.url, origin), {
    method,
    headers,
    body: method === 'GET' || method === 'HEAD' ? undefined : body,
  });
}

async function send(response, outgoing) {
  const body = Buffer.from(await response.arrayBuffer());
  outgoing.writeHead(response.status, Object.fromEntries(response.headers));
  outgoing.end(body);
}

// The `type` of a control message's body, `event` for anything else.
function kindOf(body) {
  try {
    const value = JSON.parse(body.toString('utf8'));
    return typeof value?.type === 'string' ? value.type : 'event';
  } catch {
    return 'event';
  }
}

async function serve(incoming, outgoing) {
  const chunks = [];
  for await (const chunk of incoming) chunks.push(chunk);
  const body = Buffer.concat(chunks);
  const response = await webhook(toRequest(incoming, body, origin));
  say({
    delivery: { id: incoming.headers['webhook-id'] ?? null, kind: kindOf(body), status: response.status },
  });
  await send(response, outgoing);
}

let origin;
const server = createServer(
  { cert: readFileSync(options.cert), key: readFileSync(options.key) },
  (incoming, outgoing) => {
    serve(incoming, outgoing).catch(error => {
      say({ webhookError: String(error?.message ?? error) });
      outgoing.writeHead(500).end();
    });
  },
);
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(0, options.host, resolve);
});
origin = `https://localhost:${server.address().port}`;
const callback = `${origin}/hook`;
say(`listening on ${callback}`);

let client;
let subscribed;
let stopping = false;

async function stop() {
  if (stopping) return;
  stopping = true;
  try {
    if (subscribed) {
      await client.experimental_events.unsubscribe({ key: subscribed });
      say('unsubscribed');
    }
    await client?.close();
  } catch (error) {
    fail(error?.message ?? error);
  }
  server.close();
  server.closeAllConnections();
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

try {
  client = await createMCPClient({
    transport: {
      type: 'http',
      url: options.url,
      headers: { Authorization: `Bearer ${token}` },
    },
    experimental_events: { store },
  });
  const listed = await client.experimental_events.list();
  const descriptor = listed.events.find(event => event.name === options.event);
  if (!descriptor) fail(`events/list has no ${options.event}: ${JSON.stringify(listed)}`);
  if (!descriptor.delivery.includes('webhook')) {
    fail(`${options.event} offers no webhook delivery: ${JSON.stringify(descriptor)}`);
  }
  say({ listed: descriptor });
  const result = await client.experimental_events.subscribe({
    name: options.event,
    arguments: {},
    delivery: { mode: 'webhook', url: callback },
  });
  const record = await store.getById(result.id);
  if (!record) fail(`the store has no subscription ${result.id}`);
  subscribed = record.key;
  say({ subscribed: result });
  say('ready');
} catch (error) {
  fail(`${error?.message ?? error}${error?.data ? ` ${JSON.stringify(error.data)}` : ''}`);
}
