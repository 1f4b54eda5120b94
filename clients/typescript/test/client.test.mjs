// The client's helpers against a stand-in for the gateway: the bearer
// token, errors with their pointer, waiting, and event streams with their
// reconnects (docs/api.md, Errors; Waiting for a job; Following a job live).
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import { createGatewayClient, followJobEvents, GatewayError, readEventStream, unwrap, waitForJob } from "../dist/index.js";

const job = (id, status, progress) => ({
  id,
  type: "transcription-job",
  attributes: { tenant: "acme", user_id: "u", status, progress, routing_history: [], created_at: "2026-12-01T00:00:00Z" },
  meta: {},
});
const sse = (id, name, data) => `id: ${id}\r\nevent: ${name}\r\ndata: ${JSON.stringify({ event: name, data })}\r\n\r\n`;

let server;
let baseUrl;
const seen = []; // [path, headers] of each request
let endlessClosed; // resolved when the client closes the endless stream

before(async () => {
  let waits = 0;
  server = createServer((req, res) => {
    seen.push([req.url, req.headers]);
    const json = (status, body) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    switch (req.url) {
      case "/v1/translations":
        return json(422, { error: { code: "VALIDATION_ERROR", message: "/data/attributes/input/target_language: is required",
          pointer: "/data/attributes/input/target_language", request_id: "r-1" } });
      case "/v1/transcriptions/waited":
        waits++;
        return json(200, { data: job("waited", waits < 3 ? "processing" : "completed", waits < 3 ? 50 : 100) });
      case "/v1/transcriptions/streamed/events":
        res.writeHead(200, { "content-type": "text/event-stream" });
        if (req.headers["last-event-id"] === undefined) {
          // Two events, then the stream ends before the terminal one.
          res.write(sse(1, "transcription.progress", job("streamed", "processing", 0)));
          res.write(": keep-alive\r\n\r\n");
          return res.end(sse(2, "transcription.progress", job("streamed", "processing", 40)));
        }
        assert.equal(req.headers["last-event-id"], "2");
        return res.end(sse(3, "transcription.completed", job("streamed", "completed", 100)));
      case "/v1/transcriptions/endless/events":
        // One event, then the stream stays open, as a running job's does.
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write(sse(1, "transcription.progress", job("endless", "processing", 0)));
        return new Promise((resolve) => res.on("close", resolve)).then(endlessClosed.resolve);
      case "/v1/transcriptions/gone/events":
        return json(410, { error: { code: "JOB_DELETED", message: "transcription-job gone was deleted" } });
      case "/v1/transcriptions/old/events":
        return res.writeHead(200, { "content-type": "text/event-stream" }).end();
      case "/v1/transcriptions/old":
        return json(200, { data: job("old", "completed", 100) });
      case "/v1/transcriptions/flaky/events":
        // First an empty stream (the gateway stopping), then the end.
        res.writeHead(200, { "content-type": "text/event-stream" });
        if (seen.filter(([path]) => path === req.url).length === 1) {
          return res.end();
        }
        return res.end(sse(1, "transcription.completed", job("flaky", "completed", 100)));
      case "/v1/transcriptions/flaky":
        return req.socket.destroy(); // the gateway is down meanwhile
      default:
        return json(404, { error: { code: "NOT_FOUND", message: req.url } });
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${server.address().port}`;
});

after(() => server.close());

const client = () => createGatewayClient({ baseUrl, token: "gwk_test" });

test("an error answer is the gateway's error object, its pointer included", async () => {
  const body = { data: { type: "translation-job", attributes: { input: { type: "text", content: "Hi" } } } };
  const answer = await client().POST("/v1/translations", { body });
  assert.equal(answer.response.status, 422);
  assert.equal(answer.error.error.pointer, "/data/attributes/input/target_language");
  await assert.rejects(unwrap(client().POST("/v1/translations", { body })), (error) => {
    assert.ok(error instanceof GatewayError);
    assert.equal(error.status, 422);
    assert.equal(error.code, "VALIDATION_ERROR");
    assert.equal(error.pointer, "/data/attributes/input/target_language");
    assert.equal(error.requestId, "r-1");
    return true;
  });
  const [, headers] = seen.find(([path]) => path === "/v1/translations");
  assert.equal(headers.authorization, "Bearer gwk_test");
});

test("a token function is asked for each request", async () => {
  let asked = 0;
  const refreshing = createGatewayClient({ baseUrl, token: async () => `t${++asked}` });
  await refreshing.GET("/v1/transcriptions/{id}", { params: { path: { id: "old" } } });
  await refreshing.GET("/v1/transcriptions/{id}", { params: { path: { id: "old" } } });
  assert.equal(asked, 2);
  assert.equal(seen.at(-1)[1].authorization, "Bearer t2");
});

test("waitForJob asks the gateway to wait until the job is finished", async () => {
  const done = await waitForJob(client(), "transcriptions", "waited", { timeoutMs: 5000 });
  assert.equal(done.attributes.status, "completed");
  const prefers = seen.filter(([path]) => path === "/v1/transcriptions/waited").map(([, headers]) => headers.prefer);
  assert.equal(prefers.length, 3);
  for (const prefer of prefers) {
    assert.match(prefer, /^wait=[1-5]$/);
  }
});

test("an event stream that ends early is resumed after the last event, and ends at the terminal one", async () => {
  const events = [];
  for await (const event of followJobEvents(client(), "transcriptions", "streamed", { retryDelayMs: 10 })) {
    events.push(event);
  }
  assert.deepEqual(events.map((e) => [e.id, e.event, e.data.attributes.progress]), [
    ["1", "transcription.progress", 0],
    ["2", "transcription.progress", 40],
    ["3", "transcription.completed", 100],
  ]);
  const streams = seen.filter(([path]) => path === "/v1/transcriptions/streamed/events").map(([, headers]) => headers);
  assert.deepEqual(streams.map((headers) => headers["last-event-id"]), [undefined, "2"]);
  for (const headers of streams) {
    assert.equal(headers.accept, "text/event-stream");
    assert.equal(headers.authorization, "Bearer gwk_test");
  }
});

test("leaving the loop early closes the stream", async () => {
  let resolve;
  endlessClosed = { resolve: () => resolve() };
  const closed = new Promise((r) => (resolve = r));
  for await (const event of followJobEvents(client(), "transcriptions", "endless")) {
    assert.equal(event.id, "1");
    break;
  }
  await closed; // the test times out otherwise
});

test("an abort signal stops the stream", async () => {
  let resolve;
  endlessClosed = { resolve: () => resolve() };
  const closed = new Promise((r) => (resolve = r));
  const abort = new AbortController();
  const events = [];
  await assert.rejects(async () => {
    for await (const event of followJobEvents(client(), "transcriptions", "endless", { signal: abort.signal })) {
      events.push(event.id);
      abort.abort(new Error("enough"));
    }
  }, /enough/);
  assert.deepEqual(events, ["1"]);
  await closed;
});

test("a deleted job's stream throws its 410", async () => {
  await assert.rejects(async () => {
    for await (const _ of followJobEvents(client(), "transcriptions", "gone")) {
      assert.fail("no event");
    }
  }, (error) => error instanceof GatewayError && error.status === 410 && error.code === "JOB_DELETED");
});

test("a finished job whose stream has no events ends without reconnecting", async () => {
  const events = [];
  for await (const event of followJobEvents(client(), "transcriptions", "old", { retryDelayMs: 10 })) {
    events.push(event);
  }
  assert.deepEqual(events, []);
  assert.equal(seen.filter(([path]) => path === "/v1/transcriptions/old/events").length, 1);
});

test("a job read that fails between two streams is retried like a stream", async () => {
  const events = [];
  for await (const event of followJobEvents(client(), "transcriptions", "flaky", { retryDelayMs: 10 })) {
    events.push(event.event);
  }
  assert.deepEqual(events, ["transcription.completed"]);
});

test("the event stream parser: line ends, split chunks, comments, multi-line data, an unfinished event", async () => {
  const text = "\uFEFFid: 1\r\nevent: a\r\ndata: x\r\ndata:  y\r\n\r\n: comment\n\nid: 2\ndata: z\n\rdata: w\revent: b\r\rdata: unfinished";
  const bytes = new TextEncoder().encode(text);
  // Cut the bytes everywhere, CRLFs and the BOM included.
  for (let cut = 1; cut < bytes.length; cut++) {
    const body = new ReadableStream({
      start(controller) {
        controller.enqueue(bytes.slice(0, cut));
        controller.enqueue(bytes.slice(cut));
        controller.close();
      },
    });
    const events = [];
    for await (const event of readEventStream(body)) {
      events.push(event);
    }
    assert.deepEqual(events, [
      { id: "1", event: "a", data: "x\n y" },
      { id: "2", event: "message", data: "z" },
      { id: "2", event: "b", data: "w" },
    ], `cut at ${cut}`);
  }
});
