package workflows

// WebhookBackoff exposes webhookBackoff to the tests.
var WebhookBackoff = webhookBackoff
