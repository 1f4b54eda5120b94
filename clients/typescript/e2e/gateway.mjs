// The SDK against a running gateway (cmd/gateway/typescriptsdk_test.go
// starts `gateway dev` and runs this): node e2e/gateway.mjs <base URL>
// <token>. It creates jobs and a batch, waits for them, reads results,
// follows an event stream and verifies the webhooks the gateway sends to a
// receiver it runs itself; it prints what it saw as one JSON object, and
// exits non-zero when a step fails.
import { createServer } from "node:http";

import {
  batchResults,
  createGatewayClient,
  fetchWebhookPublicKey,
  followJobEvents,
  GatewayError,
  unwrap,
  verifyWebhook,
  waitForBatch,
  waitForJob,
  WebhookVerificationError,
} from "../dist/index.js";

const [baseUrl, token] = process.argv.slice(2);
const out = {};

// The webhook receiver: keeps each request's headers and raw body, and
// answers as a receiver should, 204 when it verifies and 400 otherwise.
const received = [];
let publicKey;
const receiver = createServer((req, res) => {
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    let verified;
    try {
      verified = verifyWebhook(publicKey, req.headers, body);
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
    }
    received.push({ headers: req.headers, body, verified });
    res.writeHead(verified ? 204 : 400).end();
  });
});
await new Promise((resolve) => receiver.listen(0, "127.0.0.1", resolve));
const hookUrl = `http://127.0.0.1:${receiver.address().port}/hooks`;

async function webhook(event, timeoutMs = 120_000) {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; ) {
    const hit = received.find((r) => r.verified?.payload.event === event || JSON.parse(r.body).event === event);
    if (hit) return hit;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no ${event} webhook within ${timeoutMs} ms; got ${received.length} requests`);
}

try {
  // The public key needs no token.
  publicKey = await fetchWebhookPublicKey(createGatewayClient({ baseUrl }));
  const gateway = createGatewayClient({ baseUrl, token });

  // An llm-task with a webhook: create, wait, read the result.
  const created = await unwrap(
    gateway.POST("/v1/llm-tasks", {
      body: { data: { type: "llm-task-job", attributes: {
        input: { type: "text", text: "The gateway routes jobs to providers.", prompt: "Summarise." },
        webhook: { url: hookUrl, headers: { "X-Receiver-Token": "sdk-test" } } } } },
    }),
  );
  const job = await waitForJob(gateway, "llm-tasks", created.data.id, { timeoutMs: 120_000 });
  const result = await unwrap(gateway.GET("/v1/llm-tasks/{id}/result", { params: { path: { id: job.id } } }));
  out.job = { id: job.id, createdStatus: created.data.attributes.status, status: job.attributes.status, content: result.content,
    finish: result.finish_reason };

  // Its webhook, verified with the published key; the same request with
  // its body changed, or checked an hour later, is refused.
  const hook = await webhook("llm-task.completed");
  out.webhook = { verified: hook.verified !== undefined, id: hook.headers["webhook-id"], event: hook.verified?.payload.event,
    jobId: hook.verified?.payload.data.id, status: hook.verified?.payload.data.attributes.status,
    receiverHeader: hook.headers["x-receiver-token"] };
  const tampered = Buffer.from(hook.body.toString("utf8").replace('"completed"', '"failed"'));
  out.webhook.tamperedChanged = !tampered.equals(hook.body);
  for (const [name, check] of [
    ["tampered", () => verifyWebhook(publicKey, hook.headers, tampered)],
    ["stale", () => verifyWebhook(publicKey, hook.headers, hook.body, { now: new Date(Date.now() + 3_600_000) })],
  ]) {
    try {
      check();
      out.webhook[name] = "verified";
    } catch (error) {
      out.webhook[name] = error instanceof WebhookVerificationError ? error.reason : String(error);
    }
  }

  // A translation followed live, then its events replayed after the first.
  const translation = await unwrap(
    gateway.POST("/v1/translations", {
      body: { data: { type: "translation-job", attributes: { input: { type: "text", content: "Hello world", target_language: "de" } } } },
    }),
  );
  const live = [];
  for await (const event of followJobEvents(gateway, "translations", translation.data.id)) {
    live.push({ id: event.id, event: event.event, status: event.data.attributes.status, jobId: event.data.id });
  }
  const replayed = [];
  for await (const event of followJobEvents(gateway, "translations", translation.data.id, { lastEventId: live[0].id })) {
    replayed.push(event.id);
  }
  out.events = { jobId: translation.data.id, live, replayed };

  // A batch of two llm-tasks with a webhook: create, wait, read its results.
  const items = ["one", "two"].map((n) => ({ custom_id: `sdk-${n}`, type: "llm-task-job",
    attributes: { input: { type: "text", text: `Count to ${n}.`, prompt: "Answer." } } }));
  const batch = await unwrap(
    gateway.POST("/v1/batches", {
      params: { header: { "Idempotency-Key": `sdk-${Date.now()}` } },
      body: { data: { type: "batch", attributes: { items, webhook: { url: hookUrl } } } },
    }),
  );
  const ended = await waitForBatch(gateway, batch.data.id, { timeoutMs: 120_000 });
  const lines = await batchResults(gateway, batch.data.id);
  const batchHook = await webhook("batch.completed");
  out.batch = { id: batch.data.id, status: ended.attributes.status, counts: ended.attributes.counts,
    results: lines.map((l) => ({ custom_id: l.custom_id, status: l.status, content: l.status === "completed" ? l.result.content : undefined })),
    webhook: { verified: batchHook.verified !== undefined, id: batchHook.headers["webhook-id"], batchId: batchHook.verified?.payload.data.id } };

  // A refused create: the error object and its pointer.
  try {
    await unwrap(gateway.POST("/v1/translations", {
      body: { data: { type: "translation-job", attributes: { input: { type: "text", content: "Hi", target_language: "de", url: 42 } } } },
    }));
    out.refused = "accepted";
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    out.refused = { status: error.status, code: error.code, pointer: error.pointer, message: error.error?.message, requestId: error.requestId };
  }

  // Another tenant's job or a made-up id: 404, thrown by the stream too.
  try {
    for await (const _ of followJobEvents(gateway, "llm-tasks", "01890000-0000-7000-8000-000000000000")) break;
    out.missing = "streamed";
  } catch (error) {
    out.missing = error instanceof GatewayError ? { status: error.status, code: error.code } : String(error);
  }

  out.unverified = received.filter((r) => !r.verified).length;
  console.log(JSON.stringify(out));
} finally {
  receiver.close();
}
