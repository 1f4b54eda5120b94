package main

import (
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/stretchr/testify/require"
)

// fakeS3Bucket starts an in-memory S3 server with a bucket and answers the
// environment that points serve and worker at it (GATEWAY_BLOB_URL).
func fakeS3Bucket(t *testing.T) []string {
	t.Helper()
	backend := s3mem.New()
	require.NoError(t, backend.CreateBucket("gateway"))
	server := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(server.Close)
	bucket := "s3://gateway?" + url.Values{
		"endpoint":       {server.URL},
		"region":         {"us-east-1"},
		"use_path_style": {"true"},
		// gofakes3 sends no response checksums.
		"response_checksum_validation": {"when_required"},
	}.Encode()
	return []string{"GATEWAY_BLOB_URL=" + bucket, "AWS_ACCESS_KEY_ID=test-access-key", "AWS_SECRET_ACCESS_KEY=test-secret-key", "AWS_REGION=us-east-1"}
}
