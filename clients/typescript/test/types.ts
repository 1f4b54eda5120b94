// Compiled only (tsc -p tsconfig.test.json): the requests and answers are
// typed from api/openapi.yaml, so each @ts-expect-error line below must
// stay an error, and the README's example must compile.
import {
  createGatewayClient,
  followJobEvents,
  type JobEvent,
  unwrap,
  verifyWebhook,
  waitForJob,
  type WebhookEvent,
} from "../src/index.js";

export async function readmeExample(token: string): Promise<string | undefined> {
  const gateway = createGatewayClient({ baseUrl: "http://127.0.0.1:8080", token });
  const created = await unwrap(
    gateway.POST("/v1/translations", {
      body: { data: { type: "translation-job", attributes: { input: { type: "text", content: "Hello world", target_language: "de" } } } },
    }),
  );
  const job = await waitForJob(gateway, "translations", created.data.id);
  const result = await unwrap(gateway.GET("/v1/translations/{id}/result", { params: { path: { id: job.id } } }));
  return typeof result === "string" ? result : result.content;
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
