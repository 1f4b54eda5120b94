package api

import (
	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
)

const (
	ptrData       = jobs.PtrData
	ptrAttributes = jobs.PtrAttributes
)

// Size limits of a job's parts and of attributes.webhook (jobs.ParseCreate
// checks them).
const (
	MaxInputBytes              = jobs.MaxInputBytes
	MaxClientMetaBytes         = jobs.MaxClientMetaBytes
	MaxOptionsBytes            = jobs.MaxOptionsBytes
	MaxWebhookURLBytes         = jobs.MaxWebhookURLBytes
	MaxWebhookHeaders          = jobs.MaxWebhookHeaders
	MaxWebhookHeaderNameBytes  = jobs.MaxWebhookHeaderNameBytes
	MaxWebhookHeaderValueBytes = jobs.MaxWebhookHeaderValueBytes
	MaxWebhookHeadersBytes     = jobs.MaxWebhookHeadersBytes
)

// validApplication checks the X-Application header.
func validApplication(app string) *apierror.Error {
	if app == "" || auth.SlugPattern.MatchString(app) {
		return nil
	}
	return apierror.New(422, apierror.CodeValidation,
		"header X-Application: must be 2 to 63 characters of lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen (pattern %s)", auth.SlugPattern)
}

// parseJobRequest parses a create request's body for service
// (jobs.ParseCreateBody): the request to submit.
func parseJobRequest(service jobs.Service, body []byte) (*jobops.SubmitRequest, error) {
	if err := malformed(body); err != nil {
		return nil, err
	}
	job, err := jobs.ParseCreateBody(service, body)
	if err != nil {
		return nil, err
	}
	return jobops.NewSubmitRequest(service, job), nil
}
