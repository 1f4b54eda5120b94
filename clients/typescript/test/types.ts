// Compiled only (tsc -p tsconfig.test.json): the requests and answers are
// typed from api/openapi.yaml, so each @ts-expect-error line below must
// stay an error, and the README's example must compile.
import { createServer } from "node:http";

import {
  createGatewayClient,
  fetchWebhookPublicKey,
  followJobEvents,
  type GatewayClient,
  GatewayError,
  type JobEvent,
  unwrap,
  verifyWebhook,
  waitForJob,
  type WebhookEvent,
} from "../src/index.js";

// README.md's examples, as they are there.
export async function readmeExample(): Promise<void> {
  const gateway = createGatewayClient({ baseUrl: "http://127.0.0.1:8080", token: process.env.GATEWAY_TOKEN });
  const created = await unwrap(gateway.POST("/v1/translations", {
    body: { data: { type: "translation-job", attributes: { input: { type: "text", content: "Hello world", target_language: "de" } } } },
  }));
  const job = await waitForJob(gateway, "translations", created.data.id);
  const result = await unwrap(gateway.GET("/v1/translations/{id}/result", { params: { path: { id: job.id } } }));
  console.log(job.attributes.status, typeof result === "string" ? result : result.content);
}

export async function readmeErrorExample(form: { setError(pointer: string, message?: string): void }): Promise<void> {
  const gateway = createGatewayClient({ baseUrl: "http://127.0.0.1:8080", token: "gwk_…" });
  const body = { data: { type: "translation-job" as const, attributes: { input: { type: "text" as const, content: "Hi", target_language: "de" } } } };
  try {
    await unwrap(gateway.POST("/v1/translations", { body }));
  } catch (e) {
    if (e instanceof GatewayError && e.pointer) form.setError(e.pointer, e.error?.message);
  }
}

export async function readmeEventsExample(gateway: GatewayClient, id: string): Promise<void> {
  for await (const event of followJobEvents(gateway, "llm-tasks", id)) {
    if (event.event === "llm-task.delta") process.stdout.write(event.data.attributes.text);
    else console.log(event.event, event.data.attributes);
  }
}

export async function readmeReceiverExample(): Promise<void> {
  const key = await fetchWebhookPublicKey(createGatewayClient({ baseUrl: "http://127.0.0.1:8080" }));
  createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk) => chunks.push(chunk)).on("end", () => {
      try {
        const { id, payload } = verifyWebhook(key, req.headers, Buffer.concat(chunks));
        console.log(id, payload.event); // drop a webhook-id seen before: delivery is at least once
        res.writeHead(204).end();
      } catch {
        res.writeHead(400).end();
      }
    });
  }).listen(8081);
}

export async function typedRequests(token: string): Promise<void> {
  const gateway = createGatewayClient({ baseUrl: "http://127.0.0.1:8080", token });
  // @ts-expect-error: no such path
  await gateway.GET("/v1/translation/{id}", { params: { path: { id: "x" } } });
  // @ts-expect-error: the path parameter id is required
  await gateway.GET("/v1/translations/{id}", { params: { path: {} } });
  await gateway.POST("/v1/translations", {
    // @ts-expect-error: the job type must match the service
    body: { data: { type: "llm-task-job", attributes: { input: { type: "text", content: "Hi", target_language: "de" } } } },
  });
  await gateway.POST("/v1/translations", {
    // @ts-expect-error: formality is default, formal or informal
    body: { data: { type: "translation-job", attributes: { input: { type: "text", content: "Hi", target_language: "de" }, options: { formality: "casual" } } } },
  });
  const { data, error } = await gateway.GET("/v1/jobs", { params: { query: { "page[size]": 10 } } });
  if (error) {
    const pointer: string | undefined = error.error.pointer;
    // @ts-expect-error: codes are the ErrorCode enum
    const code: "NO_SUCH_CODE" = error.error.code;
    void pointer, code;
    return;
  }
  const total: number = data.meta.total;
  // @ts-expect-error: a status is pending, processing, completed or failed
  const status: "done" = data.data[0]!.attributes.status;
  void total, status;
}

export async function typedEvents(token: string): Promise<void> {
  const gateway = createGatewayClient({ baseUrl: "http://127.0.0.1:8080", token });
  for await (const event of followJobEvents(gateway, "llm-tasks", "x")) {
    if (event.event === "llm-task.delta") {
      const text: string = event.data.attributes.text;
      void text;
    } else if (event.event === "llm-task.completed") {
      const status: string = event.data.attributes.status;
      void status;
    }
    // @ts-expect-error: not an event of the stream
    const wrong: JobEvent["event"] = "llm-task.deleted";
    void wrong;
  }
  const hook = verifyWebhook("whpk_…", { "webhook-id": "x" }, "{}");
  const payload: WebhookEvent = hook.payload;
  if (payload.event === "batch.completed") {
    const counts: number = payload.data.attributes.counts.total;
    void counts;
  }
}
