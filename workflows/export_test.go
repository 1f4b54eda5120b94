package workflows

// WebhookBackoff exposes webhookBackoff to the tests.
var WebhookBackoff = webhookBackoff

// GenerationOneChanges are the changes generation 1 takes without a
// version marker, with their versions (the newest of each).
var GenerationOneChanges = generationOne
