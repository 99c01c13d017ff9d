// mcp_sdk_test.mjs - drives `phoenixctl mcp` with the official MCP
// TypeScript SDK client (@modelcontextprotocol/sdk, pinned in package.json)
// over stdio, against a real executor.
//
//   node mcp_sdk_test.mjs --platform linux|windows -- COMMAND [ARGS...]
//
// COMMAND starts the server (`phoenixctl --socket S mcp`, or `wine
// phoenixctl.exe mcp`). Each case prints "ok NAME" or "FAIL NAME: why";
// the exit status is the number of failures (0: all passed).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const argv = process.argv.slice(2);
const platform = argv[argv.indexOf("--platform") + 1];
const command = argv.slice(argv.indexOf("--") + 1);
const win = platform === "windows";
let failures = 0;

function check(cond, why) {
  if (!cond) throw new Error(why);
}

async function run(name, fn) {
  try {
    await fn();
    console.log(`ok ${name}`);
  } catch (e) {
    failures++;
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
  }
}

async function connect() {
  const transport = new StdioClientTransport({
    command: command[0], args: command.slice(1), stderr: "inherit",
    env: { ...process.env },
  });
  const client = new Client({ name: "phoenix-mcp-sdk-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

// Programs per platform: an ok job, a failing job, a memory hog, a job that
// prints in bursts (streamed), a job that waits (cancelled).
// On Windows the jobs are cmd scripts; what cmd.exe cannot do (allocate
// memory, sleep without ping) a small native probe does: PX_MCP_PROBE is its
// Windows path (tests/win/probe.c, copied where the sandbox may read it).
const probe = process.env.PX_MCP_PROBE || "";
const P = win ? {
  rt: "cmd",
  ok: "@echo hello from mcp\r\n",
  fail: "@echo about to fail\r\n@exit /b 3\r\n",
  hog: probe ? { runtime: "cmd", code: `@${probe} hog-memory 1024\r\n` } : null,
  stream: "@echo off\r\n" + [1, 2, 3, 4, 5].map((i) => `echo line ${i}\r\n${probe} sleep 400\r\n`).join(""),
  sleep: `@${probe} sleep 60000\r\n`,
  flood: `@${probe} write 200000\r\n`,
} : {
  rt: "sh",
  ok: "echo hello from mcp\n",
  fail: "echo about to fail; exit 3\n",
  hog: { runtime: "python", code: "x = bytearray(512 * 1024 * 1024)\nprint(len(x))\n" },
  stream: "for i in 1 2 3 4 5; do echo line $i; sleep 0.3; done\n",
  sleep: "sleep 60\n",
  flood: "i=0; while [ $i -lt 20000 ]; do echo line-$i-0123456789; i=$((i+1)); done\n",
};

const client = await connect();

await run("server_info", async () => {
  const v = client.getServerVersion();
  check(v && v.name === "phoenix-executor", `serverInfo ${JSON.stringify(v)}`);
  const caps = client.getServerCapabilities();
  check(caps && caps.tools && caps.logging, `capabilities ${JSON.stringify(caps)}`);
});

let tools;
await run("list_tools", async () => {
  tools = (await client.listTools()).tools;
  const names = tools.map((t) => t.name);
  for (const n of ["run_code", "cancel_job", "executor_status"])
    check(names.includes(n), `missing ${n} in ${names}`);
  const run = tools.find((t) => t.name === "run_code");
  check(run.outputSchema && run.outputSchema.type === "object", "run_code has no outputSchema");
  const st = tools.find((t) => t.name === "executor_status");
  check(st.annotations && st.annotations.readOnlyHint === true, "executor_status is read-only");
  const rts = run.inputSchema.properties.runtime.enum;
  check(Array.isArray(rts) && rts.includes(P.rt), `runtime enum ${JSON.stringify(rts)}`);
  if (process.env.PX_MCP_EXPECT_ADMIN === "1")
    check(names.includes("kb_list") && names.includes("kb_restore"), `admin tools missing: ${names}`);
  if (process.env.PX_MCP_EXPECT_ADMIN === "0")
    check(!names.includes("kb_list"), `kb tools listed for a non-admin: ${names}`);
});

await run("ok_job", async () => {
  const r = await client.callTool({ name: "run_code", arguments: { runtime: P.rt, code: P.ok } });
  check(!r.isError, `isError set: ${JSON.stringify(r)}`);
  check(r.structuredContent.status === "ok", `status ${r.structuredContent.status}`);
  check(r.structuredContent.exit_code === 0, `exit ${r.structuredContent.exit_code}`);
  check(r.structuredContent.stdout.includes("hello from mcp"), `stdout ${r.structuredContent.stdout}`);
  check(r.content[0].type === "text" && r.content[0].text.startsWith("ok: exit 0"), r.content[0].text);
  if (win) check(r.structuredContent.enforcement.includes("degraded"), "Wine must say degraded");
});

await run("failing_job", async () => {
  const r = await client.callTool({ name: "run_code", arguments: { runtime: P.rt, code: P.fail } });
  check(r.isError === true, "a non-zero exit is a tool result with isError");
  check(r.structuredContent.status === "nonzero_exit", `status ${r.structuredContent.status}`);
  check(r.structuredContent.exit_code === 3, `exit ${r.structuredContent.exit_code}`);
  check(r.structuredContent.violation === null, "no violation expected");
});

// A chart and a table the code writes: the chart comes back as an `image`
// content item, the table as an embedded `resource`, both listed (without
// their bytes) in structuredContent.files.
const pngJob = [
  "import zlib, struct",
  "def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)",
  "rows = b''.join(b'\\x00' + b''.join(bytes([x * 16 % 256, y * 16 % 256, 200]) for x in range(16)) for y in range(16))",
  "png = b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 16, 16, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b'')",
  "open('chart.png', 'wb').write(png)",
  "open('table.csv', 'w').write('x,y\\n1,2\\n')",
  "print('wrote', len(png))",
].join("\n") + "\n";

await run("collect_image", async () => {
  if (win) {
    // cmd cannot draw a PNG: a table comes back as an embedded resource
    // (the walk itself: px_tests_win's wincollect_* tests).
    const r = await client.callTool({
      name: "run_code",
      arguments: { runtime: "cmd", code: "@echo x,y> table.csv\r\n", capabilities: ["fs:write_tmp"],
                   collect: ["*.csv"] },
    });
    check(!r.isError, `isError set: ${JSON.stringify(r).slice(0, 400)}`);
    const res = r.content.find((c) => c.type === "resource");
    check(res && res.resource.mimeType === "text/csv", `no csv resource: ${JSON.stringify(r.content)}`);
    check(Buffer.from(res.resource.blob, "base64").toString() === "x,y\r\n", "csv content");
    return;
  }
  const r = await client.callTool({
    name: "run_code",
    arguments: { runtime: "python", code: pngJob, capabilities: ["fs:write_tmp"],
                 collect: ["*.png", "*.csv"] },
  });
  check(!r.isError, `isError set: ${JSON.stringify(r).slice(0, 400)}`);
  const img = r.content.find((c) => c.type === "image");
  check(img && img.mimeType === "image/png", `no image item: ${JSON.stringify(r.content.map((c) => c.type))}`);
  const png = Buffer.from(img.data, "base64");
  check(png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), "not a PNG");
  const res = r.content.find((c) => c.type === "resource");
  check(res && res.resource.mimeType === "text/csv", `no csv resource: ${JSON.stringify(res)}`);
  check(Buffer.from(res.resource.blob, "base64").toString() === "x,y\n1,2\n", "csv content");
  check(res.resource.uri.startsWith("phoenix://job/"), `uri ${res.resource.uri}`);
  const files = r.structuredContent.files;
  check(Array.isArray(files) && files.length === 2, `files ${JSON.stringify(files)}`);
  check(files.every((f) => f.sha256 && f.content === undefined), "structuredContent lists, without content");
  check(files.find((f) => f.path === "chart.png").bytes === png.length, "chart size");
});

await run("memory_hog", async () => {
  if (!P.hog) throw new Error("no memory hog program for this platform");
  const r = await client.callTool({
    name: "run_code",
    arguments: { ...P.hog, limits: { memory_bytes: 64 * 1024 * 1024 }, timeout: 60 },
  });
  const sc = r.structuredContent;
  check(r.isError === true, "a limit kill is a tool result with isError");
  check(sc.status === "killed", `status ${sc.status}: ${JSON.stringify(sc)}`);
  check(sc.violation && sc.violation.limit === "memory", `violation ${JSON.stringify(sc.violation)}`);
  check(sc.violation.configured === 64 * 1024 * 1024, `configured ${sc.violation.configured}`);
  check(/^killed: memory limit 64 MiB exceeded/.test(sc.verdict), `verdict ${sc.verdict}`);
});

await run("streamed_job_progress", async () => {
  const notes = [];
  const r = await client.callTool(
    { name: "run_code", arguments: { runtime: P.rt, code: P.stream } },
    undefined,
    { onprogress: (p) => notes.push(p), timeout: 120000 },
  );
  check(r.structuredContent.status === "ok", `status ${r.structuredContent.status}`);
  const text = notes.map((n) => n.message || "").join("");
  for (let i = 1; i <= 5; i++) check(text.includes(`line ${i}`), `line ${i} not streamed: ${text}`);
  check(notes.length >= 3, `only ${notes.length} progress notifications`);
  for (let i = 1; i < notes.length; i++)
    check(notes[i].progress > notes[i - 1].progress, "progress must increase");
  // Output arrived before the result, spread over time (rate-bounded, not one burst).
  check(notes.some((n) => /started/.test(n.message || "")), "no 'started' progress");
});

await run("progress_rate_bounded", async () => {
  // A job that floods its output: the notifications stay within the
  // documented bound (one per stream per 100 ms, plus the phase notes and
  // one final chunk and note per stream), and the result has all of it.
  const notes = [];
  const t0 = Date.now();
  const r = await client.callTool(
    { name: "run_code", arguments: { runtime: P.rt, code: P.flood } },
    undefined,
    { onprogress: (p) => notes.push(p), timeout: 120000 },
  );
  const ms = Date.now() - t0;
  check(r.structuredContent.status === "ok", `status ${r.structuredContent.status}`);
  check(r.structuredContent.stdout.length >= 100000, `stdout ${r.structuredContent.stdout.length} bytes`);
  const bound = 2 * (Math.ceil(ms / 100) + 1) + 2 + 4;
  check(notes.length <= bound, `${notes.length} notifications in ${ms} ms (bound ${bound})`);
});

await run("cancel", async () => {
  const ac = new AbortController();
  const notes = [];
  const started = new Promise((resolve) => {
    const p = client.callTool(
      { name: "run_code", arguments: { runtime: P.rt, code: P.sleep, timeout: 120 } },
      undefined,
      {
        signal: ac.signal, timeout: 120000,
        onprogress: (n) => { notes.push(n); if (/started/.test(n.message || "")) resolve({ p }); },
      },
    );
    p.catch(() => {});
  });
  const { p } = await started; // (a bare promise would be adopted: wrap it)
  const t0 = Date.now();
  ac.abort("test cancels");
  let aborted = false;
  try { await p; } catch (e) { aborted = true; }
  check(aborted, "the aborted call must reject on the client");
  // The job is gone: the service's counters say cancelled, soon.
  let cancelled = 0;
  for (let i = 0; i < 50 && cancelled < 1; i++) {
    const s = await client.callTool({ name: "executor_status", arguments: {} });
    cancelled = s.structuredContent.counters.cancelled;
    if (cancelled < 1) await new Promise((r) => setTimeout(r, 200));
  }
  check(cancelled >= 1, "the executor never counted a cancelled job");
  check(Date.now() - t0 < 30000, "cancellation took too long");
});

await run("cancel_job_tool", async () => {
  const id = `sdk-cancel-${process.pid}`;
  const p = client.callTool(
    { name: "run_code", arguments: { runtime: P.rt, code: P.sleep, job_id: id } },
    undefined, { timeout: 120000 });
  await new Promise((r) => setTimeout(r, 1000));
  const c = await client.callTool({ name: "cancel_job", arguments: { job_id: id } });
  check(!c.isError && c.structuredContent.cancel_requested === true, JSON.stringify(c));
  const r = await p;
  check(r.structuredContent.status === "cancelled", `status ${r.structuredContent.status}`);
  check(r.isError === true, "cancelled is isError");
});

await run("executor_status", async () => {
  const s = await client.callTool({ name: "executor_status", arguments: {} });
  check(!s.isError, JSON.stringify(s));
  check(typeof s.structuredContent.workers === "number", JSON.stringify(s.structuredContent));
});

await run("bad_arguments_are_tool_errors", async () => {
  const r = await client.callTool({ name: "run_code", arguments: { runtime: P.rt } });
  check(r.isError === true && /invalid arguments/.test(r.content[0].text), JSON.stringify(r));
  const q = await client.callTool({ name: "run_code",
    arguments: { runtime: P.rt, code: P.ok, limits: { memory_bytes: 1e15 } } });
  check(q.isError === true && q.structuredContent.status === "rejected",
        `above the policy maximum: ${JSON.stringify(q.structuredContent)}`);
});

await run("ping", async () => { await client.ping(); });

await client.close();
console.log(failures ? `${failures} FAILED` : "all passed");
process.exit(failures ? 1 : 0);
