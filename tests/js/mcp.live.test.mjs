// The official TypeScript MCP SDK's client (@modelcontextprotocol/sdk, a devDependency),
// unchanged, against a live `svcrest serve --mcp` with the tools of tests/site/mcp_site.py:
// anonymous, a subscriber (the plugin's bearer scheme) and an editor (an application
// password over Basic) each list and run exactly what they may.
//
// tests/test_js_module.py starts the server on a free port with a fresh database, then runs
// this file with SVCREST_MCP_SITE and SVCREST_MCP_EDITOR (the editor's Basic credentials,
// base64) set; without them the tests skip.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

const SITE = process.env.SVCREST_MCP_SITE;
const EDITOR = process.env.SVCREST_MCP_EDITOR;
const skip = SITE && EDITOR ? false : "SVCREST_MCP_SITE is not set (tests/test_js_module.py sets it)";

/** A connected SDK client sending `headers`, and a function that ends its session. */
async function connect(headers) {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StreamableHTTPClientTransport } = await import(
    "@modelcontextprotocol/sdk/client/streamableHttp.js"
  );
  const transport = new StreamableHTTPClientTransport(new URL(`${SITE}/mcp`), {
    requestInit: { headers },
  });
  const client = new Client({ name: "svcrest-node-test", version: "1.0.0" });
  await client.connect(transport);
  return {
    client,
    async close() {
      await transport.terminateSession();
      await client.close();
    },
  };
}

/** Each tool's structured result, or the REST code of its tool error. */
async function runAll(client) {
  const calls = {
    "site-info": {},
    "site-whoami": {},
    "math-double": { input: 21 },
    get_mcpdemo_v1_echo: { word: "hi" },
    post_mcpdemo_v1_items: { word: "hello" },
  };
  const results = {};
  for (const [name, args] of Object.entries(calls)) {
    const result = await client.callTool({ name, arguments: args });
    results[name] = result.isError ? JSON.parse(result.content[0].text).code : result.structuredContent;
  }
  return results;
}

const callers = [
  {
    who: "anonymous",
    headers: () => ({}),
    names: ["site-info", "get_mcpdemo_v1_echo"],
    results: {
      "site-info": { name: "svcrest" },
      "site-whoami": "rest_ability_cannot_execute",
      "math-double": "rest_ability_cannot_execute",
      get_mcpdemo_v1_echo: { word: "hi" },
      post_mcpdemo_v1_items: "rest_forbidden",
    },
  },
  {
    who: "subscriber",
    headers: () => ({ Authorization: "Bearer subscriber-token" }),
    names: ["site-info", "site-whoami", "get_mcpdemo_v1_echo"],
    results: {
      "site-info": { name: "svcrest" },
      "site-whoami": { result: "sub1" },
      "math-double": "rest_ability_cannot_execute",
      get_mcpdemo_v1_echo: { word: "hi" },
      post_mcpdemo_v1_items: "rest_forbidden",
    },
  },
  {
    who: "editor",
    headers: () => ({ Authorization: `Basic ${EDITOR}` }),
    names: ["site-info", "site-whoami", "math-double", "get_mcpdemo_v1_echo", "post_mcpdemo_v1_items"],
    results: {
      "site-info": { name: "svcrest" },
      "site-whoami": { result: "editor1" },
      "math-double": { result: 42 },
      get_mcpdemo_v1_echo: { word: "hi" },
      post_mcpdemo_v1_items: { word: "hello", length: 5 },
    },
  },
];

describe("the TypeScript SDK's client against svcrest serve --mcp", { skip }, () => {
  for (const caller of callers) {
    test(`${caller.who} lists and runs exactly what it may`, async () => {
      const { client, close } = await connect(caller.headers());
      try {
        const { tools } = await client.listTools();
        assert.deepEqual(
          tools.map((tool) => tool.name),
          caller.names,
        );
        assert.deepEqual(await runAll(client), caller.results);
        const { resources } = await client.listResources();
        assert.deepEqual(
          resources.map((resource) => resource.uri),
          [`${SITE}/svc-json/`, `${SITE}/openapi.json`],
        );
      } finally {
        await close();
      }
    });
  }

  test("an unknown tool is a JSON-RPC error", async () => {
    const { client, close } = await connect({});
    try {
      await assert.rejects(client.callTool({ name: "nope", arguments: {} }), /Unknown tool: nope/);
    } finally {
      await close();
    }
  });
});
